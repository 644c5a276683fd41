"""Finding model files in a model directory, unpacking a ``model.tar.gz`` safely, and the
pickle opt-in. Knows nothing about what the files contain beyond the pickle header.

Rules: the candidates are the regular files directly in the directory whose names do not start
with a dot; sub-directories (``code/``) are ignored. A directory holding one ``*.tar.gz``
(or ``*.tgz``) and nothing else is served from the archive's contents.
"""

from __future__ import annotations

import logging
import pickle
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from smserve.errors import ModelLoadError

logger = logging.getLogger(__name__)

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
PICKLE_PROTO = 0x80  # first byte of every pickle of protocol 2 or later


def candidate_files(model_dir: Path) -> list[Path]:
    """Regular, non-dot files directly in ``model_dir``, sorted by name."""
    try:
        files = sorted(p for p in model_dir.iterdir() if p.is_file())
    except OSError as exc:
        raise ModelLoadError(f"cannot list {model_dir}: {exc.strerror or exc}") from exc
    hidden = [p.name for p in files if p.name.startswith(".")]
    if hidden:
        logger.info("ignoring hidden files in %s: %s", model_dir, ", ".join(hidden))
    return [p for p in files if not p.name.startswith(".")]


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@contextmanager
def opened_model_dir(model_dir: Path) -> Iterator[Path]:
    """Yield the directory that holds the model files: ``model_dir`` itself, or a temporary
    directory with its archive unpacked (removed on exit, so load everything inside)."""
    if not model_dir.is_dir():
        raise ModelLoadError(f"model directory {model_dir} does not exist or is not a directory")
    archive = _single_archive(model_dir)
    if archive is None:
        yield model_dir
        return
    with tempfile.TemporaryDirectory(prefix="smserve-model-") as scratch:
        logger.info("unpacking %s", archive)
        root = _model_root(unpack_archive(archive, Path(scratch)))
        try:
            yield root
        except ModelLoadError as exc:  # the temporary path alone would not tell the user much
            raise ModelLoadError(f"{exc} (unpacked from {archive})") from exc


def _single_archive(model_dir: Path) -> Path | None:
    files = candidate_files(model_dir)
    archives = [p for p in files if is_archive(p)]
    if not archives:
        return None
    if len(files) > 1:
        names = ", ".join(p.name for p in files)
        raise ModelLoadError(
            f"{model_dir} holds an archive and other files ({names}); "
            "keep either one model archive or the unpacked model files"
        )
    return archives[0]


def _model_root(unpacked: Path) -> Path:
    """The unpacked tree, or its single top-level directory when the archive wrapped one."""
    entries = [p for p in unpacked.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return unpacked


def unpack_archive(archive: Path, destination: Path) -> Path:
    """Extract the gzip tar ``archive`` into ``destination`` and return it.

    Raises ModelLoadError naming the archive and member for absolute paths, ``..`` parts,
    links that leave the archive, devices and other special files, or an unreadable archive.
    """
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                _check_member(member)
            tar.extractall(destination, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ModelLoadError(f"{archive}: cannot unpack: {exc}") from exc
    except _UnsafeMember as exc:
        raise ModelLoadError(f"{archive}: refusing to unpack: {exc}") from None
    return destination


class _UnsafeMember(Exception):
    """An archive member that could write outside the destination or is not a plain entry."""


def _check_member(member: tarfile.TarInfo) -> None:
    name = member.name
    if _is_absolute(name) or ".." in PurePosixPath(name).parts:
        raise _UnsafeMember(f"member {name!r} has an absolute path or a '..' part")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise _UnsafeMember(f"member {name!r} is a device, FIFO or other special file")
    if member.issym() or member.islnk():
        _check_link(member)


def _check_link(member: tarfile.TarInfo) -> None:
    # Symlink targets are relative to the link's directory, hard-link targets to the root.
    base = PurePosixPath(member.name).parent if member.issym() else PurePosixPath()
    target = member.linkname
    if _is_absolute(target) or _escapes(base / target):
        raise _UnsafeMember(f"link {member.name!r} points outside the archive ({target!r})")


def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or bool(PureWindowsPath(path).anchor)


def _escapes(path: PurePosixPath) -> bool:
    depth = 0
    for part in path.parts:
        depth += {"..": -1, ".": 0}.get(part, 1)
        if depth < 0:
            return True
    return False


def is_pickle(path: Path) -> bool:
    """Whether ``path`` starts like a pickle (protocol 2 or later)."""
    with path.open("rb") as stream:
        return stream.read(1) == bytes([PICKLE_PROTO])


def unpickle(path: Path, allow_pickle: bool) -> Any:
    """Unpickle the model file ``path`` when ``allow_pickle``; raise ModelLoadError otherwise.

    Unpickling runs arbitrary code from the file, hence the explicit opt-in.
    """
    if not allow_pickle:
        raise ModelLoadError(
            f"{path} is a pickle file; unpickling can run arbitrary code, so it is refused. "
            "Save the model with Booster.save_model, or set SMSERVE_ALLOW_PICKLE=true if you "
            "trust this file"
        )
    logger.warning("unpickling %s (SMSERVE_ALLOW_PICKLE=true)", path)
    try:
        with path.open("rb") as stream:
            return pickle.load(stream)  # noqa: S301 - explicit opt-in above
    except Exception as exc:  # unpickling can raise anything
        raise ModelLoadError(f"{path}: cannot unpickle: {exc}") from exc
