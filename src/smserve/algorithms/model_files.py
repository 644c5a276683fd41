"""Finding model files in a model directory, opening a directory that holds a model archive,
and the checks every model file gets before a loader parses it (readable, not empty); reading
pickles with only the globals a loader admits, the full unpickler only with the opt-in. Knows
nothing about what the files contain beyond the pickle header. Every file is
listed, sized and opened through ``confinement``.

Rules (docs/algorithms.md): the candidates are the regular files directly in the directory
whose names do not start with a dot and are not archives (``*.tar.gz``, ``*.tgz``);
sub-directories (``code/``) are ignored.

* One archive and nothing else: served from the archive's contents, unpacked to a temporary
  directory (``SM_MODEL_DIR`` may be read-only).
* Archives next to files: served as the folder is, the archives ignored, when every archive
  was extracted there (each file at its top level is in the folder, with the size it
  declares) and every other file came from one of them. That is what the SageMaker SDK's
  local mode mounts: ``Model(...).deploy`` extracts ``model.tar.gz`` next to itself, and
  ``Estimator.deploy`` after a local ``fit`` leaves ``model.tar.gz`` and the training job's
  ``output.tar.gz`` with what they unpack to.
* Anything else (two archives alone, a file no archive holds, an archive whose files are
  missing or differ) is refused, naming what does not match.
"""

from __future__ import annotations

import io
import logging
import pickle
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from smserve.algorithms.confinement import (
    confined,
    file_size,
    is_directory,
    read_bytes,
    regular_files,
)
from smserve.algorithms.model_archive import top_level_files, unpack_archive
from smserve.config import DEFAULT_MAX_MODEL_UNPACKED_MB, MIB
from smserve.errors import ModelLoadError

logger = logging.getLogger(__name__)

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
PICKLE_PROTO = 0x80  # first byte of every pickle of protocol 2 or later
Substitutes = Mapping[tuple[str, str], Any]


def candidate_files(model_dir: Path) -> list[Path]:
    """Regular, non-dot, non-archive files directly in ``model_dir``, sorted by name."""
    return [p for p in _listing(model_dir) if not is_archive(p)]


def _listing(model_dir: Path) -> list[Path]:
    try:
        files = regular_files(model_dir)
    except OSError as exc:
        raise ModelLoadError(f"cannot list {model_dir}: {exc.strerror or exc}") from exc
    hidden = [p.name for p in files if p.name.startswith(".")]
    if hidden:
        logger.info("ignoring hidden files in %s: %s", model_dir, ", ".join(hidden))
    return [p for p in files if not p.name.startswith(".")]


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@contextmanager
def opened_model_dir(
    model_dir: Path,
    max_unpacked_bytes: int = DEFAULT_MAX_MODEL_UNPACKED_MB * MIB,
    scratch_parent: Path | None = None,
) -> Iterator[Path]:
    """Yield the directory that holds the model files (see the module doc): ``model_dir``
    itself, or a temporary directory under ``scratch_parent`` (the system's when None) with
    its archive unpacked, removed on exit or failure, so load everything inside."""
    if not is_directory(model_dir):
        raise ModelLoadError(f"model directory {model_dir} does not exist or is not a directory")
    archive = _archive_to_unpack(model_dir)
    if archive is None:
        yield model_dir
        return
    with tempfile.TemporaryDirectory(prefix="smserve-model-", dir=scratch_parent) as scratch:
        logger.info("unpacking %s", archive)
        unpacked = unpack_archive(archive, Path(scratch), max_unpacked_bytes)
        with confined(unpacked):  # the unpacked tree is read only beneath itself
            root = _model_root(unpacked)
            _refuse_nested_archive(root, archive)
            try:
                yield root
            except ModelLoadError as exc:  # the temporary path alone would not tell much
                raise ModelLoadError(f"{exc} (unpacked from {archive})") from exc


def _archive_to_unpack(model_dir: Path) -> Path | None:
    """The archive to unpack, or None when the directory's own files are the model."""
    files = _listing(model_dir)
    archives = [p for p in files if is_archive(p)]
    if not archives:
        return None
    others = {p.name for p in files if not is_archive(p)}
    if len(archives) == 1 and not others:
        return archives[0]
    mismatch = _mismatch(model_dir, archives, others) if others else "no files beside them"
    if mismatch is None:
        logger.info(
            "ignoring %s: %s already holds the files they unpack to (%s), as the SageMaker "
            "SDK's local mode leaves it; serving those",
            ", ".join(p.name for p in archives),
            model_dir,
            ", ".join(sorted(others)),
        )
        return None
    names = ", ".join(p.name for p in files)
    raise ModelLoadError(
        f"{model_dir} holds archives and other files ({names}) that are not what the archives "
        f"unpack to ({mismatch}); keep either one model archive or the unpacked model files"
    )


def _mismatch(model_dir: Path, archives: list[Path], others: set[str]) -> str | None:
    """None when the folder's other files are exactly what ``archives`` hold at their top
    level, each with the declared size; else what differs (unrelated files first)."""
    held = {archive: top_level_files(archive) for archive in archives}
    stray = sorted(others.difference(*held.values()))
    if stray:
        return f"no archive holds {', '.join(stray)}"
    for archive, files in held.items():
        for name, size in files.items():
            if name not in others:
                return f"{archive.name} holds {name}, which is not in the folder"
            if size is not None and _size(model_dir / name) != size:
                return f"{name} is not the {size}-byte file {archive.name} holds"
    return None


def _size(path: Path) -> int | None:
    try:
        return file_size(path)
    except OSError:
        return None


def _model_root(unpacked: Path) -> Path:
    """The unpacked tree, or its single top-level directory when the archive wrapped one."""
    entries = [p for p in unpacked.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and is_directory(entries[0]):
        return entries[0]
    return unpacked


def _refuse_nested_archive(root: Path, archive: Path) -> None:
    nested = [p.name for p in _listing(root) if is_archive(p)]
    if nested:
        raise ModelLoadError(
            f"{archive} holds another archive ({', '.join(nested)}); pack the model files "
            "themselves"
        )


def read_model_file(path: Path) -> bytes:
    """The bytes of the model file ``path``; ModelLoadError naming it when it cannot be read
    or is empty."""
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not data:
        raise ModelLoadError(_EMPTY.format(path=path))
    return data


def check_not_empty(path: Path) -> None:
    """Raise ModelLoadError naming ``path`` when it is a zero-byte (or unreadable) file."""
    try:
        size = file_size(path)
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if size == 0:
        raise ModelLoadError(_EMPTY.format(path=path))


_EMPTY = (
    "{path} is empty (0 bytes): the model was not saved completely, or was copied before it "
    "was written; save or copy it again"
)


def starts_like_pickle(data: bytes) -> bool:
    """Whether ``data`` starts with a pickle's PROTO opcode and a protocol from 2 to 5."""
    return len(data) >= 2 and data[0] == PICKLE_PROTO and 2 <= data[1] <= 5


class PickleRefused(Exception):
    """The restricted unpickler met a global it does not admit."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Unpickler(pickle.Unpickler):
    """Resolves the globals in ``substitutes`` to what stands in for them; any other global
    is refused (``admit_all`` False) or resolved as pickle does (True: runs the file's code)."""

    def __init__(self, stream: IO[bytes], substitutes: Substitutes, admit_all: bool) -> None:
        super().__init__(stream)
        self.substitutes = substitutes
        self.admit_all = admit_all

    def find_class(self, module: str, name: str) -> Any:
        found = self.substitutes.get((module, name))
        if found is not None:
            return found
        if self.admit_all:
            return super().find_class(module, name)
        raise PickleRefused(f"{module}.{name}")


def unpickle(path: Path, data: bytes, allow_pickle: bool, substitutes: Substitutes) -> Any:
    """Unpickle ``data`` (the model file ``path``) with only the globals of ``substitutes``,
    (module, name) -> what stands in for it, none of which may run anything: reading such a
    pickle runs no code from the file. A pickle that needs another global is refused naming it,
    unless ``allow_pickle``: then the full unpickler reads it (running the file's code), with
    the substitutes still standing in."""
    try:
        return _unpickled(path, data, substitutes, admit_all=False)
    except PickleRefused as refused:
        if not allow_pickle:
            raise ModelLoadError(
                f"{path} is a pickle that needs {refused.name}, which the safe reader refuses "
                "(only an XGBoost Booster is read without running code from the file). "
                "Unpickling anything else can run arbitrary code: save the model with "
                "Booster.save_model, or set SMSERVE_ALLOW_PICKLE=true if you trust this file"
            ) from None
    logger.warning("unpickling %s with the full unpickler (SMSERVE_ALLOW_PICKLE=true)", path)
    return _unpickled(path, data, substitutes, admit_all=True)


def _unpickled(path: Path, data: bytes, substitutes: Substitutes, admit_all: bool) -> Any:
    try:
        return _Unpickler(io.BytesIO(data), substitutes, admit_all).load()
    except PickleRefused:
        raise
    except Exception as exc:  # unpickling can raise anything
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ModelLoadError(f"{path}: cannot unpickle: {detail}") from exc
