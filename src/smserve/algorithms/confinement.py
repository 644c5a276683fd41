"""Where a model load may read: every model file and folder a load opens, lists or sizes goes
through this module, so the rule lives in one place.

A load runs ``confined(root)`` or unconfined (``confined(None)``, the default):

* **confined** (multi-model endpoints, beneath SMSERVE_MODELS_DIR; an unpacked model archive,
  beneath its scratch directory): a path is walked one component at a time from a descriptor
  of ``root``, each component opened relative to the previous one's descriptor without
  following links (``O_NOFOLLOW``). A symbolic link is read (``readlink``) and its target
  walked the same way, so a link may point anywhere *inside* the root; ``..`` is taken
  lexically and may not climb above the root; an absolute path or link target must lie under
  the root. Anything that would leave the root raises ``Outside`` before the outside object is
  opened, listed or even ``stat``ed. The walk is redone at every open (never a path checked
  once and opened later), and the file opened last is compared (device and inode) with what
  the walk found, so a link swapped in between is refused, not followed.
* **unconfined** (SM_MODEL_DIR, TF Serving layouts): paths and links resolve as the operating
  system resolves them; the operator chose those directories.

Either way only regular files are opened, and with ``O_NONBLOCK``, so a FIFO or device in a
model folder can never block or trigger a load.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from smserve.errors import ModelLoadError

MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_root: ContextVar[Path | None] = ContextVar("smserve_model_root", default=None)


class Outside(ModelLoadError):
    """A path, or a link on it, leads outside the directory the load is confined to."""


@contextlib.contextmanager
def confined(root: Path | None) -> Iterator[None]:
    """Confine every model file access in this context (thread) beneath ``root``; None lifts
    the confinement for the context."""
    token = _root.set(None if root is None else Path(os.path.abspath(root)))
    try:
        yield
    finally:
        _root.reset(token)


def current_root() -> Path | None:
    """The directory loads are confined to now, or None."""
    return _root.get()


def open_file(path: Path) -> BinaryIO:
    """``path`` opened for reading; raises Outside, or OSError (IsADirectoryError for a
    directory, a plain OSError for anything but a regular file)."""
    root = _root.get()
    fd = _open_plain(path) if root is None else _open_beneath(root, path)
    return os.fdopen(fd, "rb")


def read_bytes(path: Path) -> bytes:
    """The whole of the regular file ``path`` (as ``open_file``)."""
    with open_file(path) as stream:
        return stream.read()


def file_size(path: Path) -> int:
    """The size of the regular file ``path``, following links only within the root."""
    with open_file(path) as stream:
        return os.fstat(stream.fileno()).st_size


def is_directory(path: Path) -> bool:
    """Whether ``path`` is a directory (False when it is missing); raises Outside."""
    root = _root.get()
    if root is None:
        return path.is_dir()
    try:
        with _Walk(root) as walk:
            walk.follow(path)
            return walk.leaf is None
    except (FileNotFoundError, NotADirectoryError):
        return False


def resolve_directory(path: Path) -> Path:
    """The real location of the directory ``path`` (beneath the root when confined); raises
    Outside, FileNotFoundError or NotADirectoryError."""
    root = _root.get()
    if root is None:
        if not path.is_dir():
            raise NotADirectoryError(str(path))
        return path.resolve()
    with _Walk(root) as walk:
        walk.follow(path)
        if walk.leaf is not None:
            raise NotADirectoryError(str(path))
        return walk.real_root.joinpath(*walk.names)


def regular_files(directory: Path) -> list[Path]:
    """The regular files directly in ``directory`` (links resolved, within the root when
    confined), as ``directory / name``, sorted; other entries are left out. Raises Outside for
    an entry whose name does not start with a dot and that links outside the root."""
    root = _root.get()
    if root is None:
        return sorted(p for p in directory.iterdir() if p.is_file())
    with _Walk(root) as walk:
        walk.follow(directory)
        if walk.leaf is not None:
            raise NotADirectoryError(str(directory))
        names = sorted(entry.name for entry in os.scandir(walk.top))
    return [directory / name for name in names if _is_regular_beneath(root, directory / name)]


def _is_regular_beneath(root: Path, path: Path) -> bool:
    try:
        with _Walk(root) as walk:
            walk.follow(path)
            return walk.leaf is not None and stat.S_ISREG(walk.leaf_stat.st_mode)
    except Outside:
        if path.name.startswith("."):
            return False  # hidden entries are never read anyway
        raise
    except OSError:
        return False


def _open_plain(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _require_regular(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_beneath(root: Path, path: Path) -> int:
    with _Walk(root) as walk:
        walk.follow(path)
        if walk.leaf is None:
            raise IsADirectoryError(f"{path} is a directory")
        _require_regular(path, walk.leaf_stat)
        fd = os.open(walk.leaf, _FILE_FLAGS, dir_fd=walk.top)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (walk.leaf_stat.st_dev, walk.leaf_stat.st_ino):
        os.close(fd)
        raise OSError(f"{path} changed while it was being opened; try again")
    return fd


def _require_regular(path: Path, found: os.stat_result) -> None:
    if stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(f"{path} is a directory")
    if not stat.S_ISREG(found.st_mode):
        raise OSError(f"{path} is not a regular file (a FIFO, socket or device)")


@dataclass
class _Walk:
    """Descriptors of the directories from the root down to where a walk has got to."""

    root: Path
    real_root: Path = field(init=False)
    fds: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    leaf: str | None = None  # the last component when it is not a directory
    leaf_stat: os.stat_result = field(init=False)
    links: int = 0

    def __post_init__(self) -> None:
        self.real_root = Path(os.path.realpath(self.root))
        self.fds.append(os.open(self.real_root, _DIR_FLAGS & ~os.O_NOFOLLOW))

    def __enter__(self) -> _Walk:
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()

    @property
    def top(self) -> int:
        return self.fds[-1]

    def follow(self, path: Path) -> None:
        """Walk ``path`` (relative to the root, or absolute under it)."""
        pending = self._relative(PurePosixPath(path), str(path))
        while pending:
            part = pending.pop(0)
            if self.leaf is not None:
                raise NotADirectoryError(f"{path}: {self.leaf} is not a directory")
            pending[:0] = self._step(part, str(path))

    def _relative(self, path: PurePosixPath, shown: str) -> list[str]:
        if not path.is_absolute():
            return list(path.parts)
        for base in (PurePosixPath(self.root), PurePosixPath(self.real_root)):
            if path.is_relative_to(base):
                return list(path.relative_to(base).parts)
        raise Outside(f"{shown} is outside {self.root}")

    def _step(self, part: str, shown: str) -> list[str]:
        """Take one component; returns the components a link put in its place."""
        if part in ("", "."):
            return []
        if part == "..":
            self._up(shown)
            return []
        found = os.lstat(part, dir_fd=self.top)
        if stat.S_ISLNK(found.st_mode):
            return self._link(part, shown)
        if stat.S_ISDIR(found.st_mode):
            self._down(part, found)
        else:
            self.leaf, self.leaf_stat = part, found
        return []

    def _up(self, shown: str) -> None:
        if not self.names:
            raise Outside(f"{shown} climbs above {self.root} ('..')")
        os.close(self.fds.pop())
        self.names.pop()

    def _down(self, part: str, found: os.stat_result) -> None:
        fd = os.open(part, _DIR_FLAGS, dir_fd=self.top)
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
            os.close(fd)
            raise OSError(f"{part} changed while it was being opened; try again")
        self.fds.append(fd)
        self.names.append(part)

    def _link(self, part: str, shown: str) -> list[str]:
        self.links += 1
        if self.links > MAX_LINKS:
            raise OSError(f"{shown}: too many levels of symbolic links")
        target = PurePosixPath(os.readlink(part, dir_fd=self.top))
        where = "/".join([*self.names, part])
        outside = Outside(f"{shown}: {where} is a symbolic link to {target}, outside {self.root}")
        if not target.is_absolute():
            if _climbs_above(len(self.names), target):
                raise outside
            return list(target.parts)
        try:
            parts = self._relative(target, str(target))
        except Outside:
            raise outside from None
        while self.names:  # an absolute target restarts from the root
            os.close(self.fds.pop())
            self.names.pop()
        return parts


def _climbs_above(depth: int, target: PurePosixPath) -> bool:
    """Whether ``target``, taken from ``depth`` directories below the root, climbs above it
    as written (links inside it are checked when they are walked)."""
    for part in target.parts:
        depth += {"..": -1, ".": 0}.get(part, 1)
        if depth < 0:
            return True
    return False
