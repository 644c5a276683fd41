"""Each model file's name, size and first bytes (its head): what an algorithm looks at to
claim files (``AlgorithmSpec.detects``) and what a footprint is estimated from, before any
loader parses a byte more. A model file is hostile input, so at most HEAD_BYTES of each is
read here. Files inside a model archive are read as the archive streams past (one pass,
nothing written); files on disk keep their path, so a description may look further (a
bounded read, see ``smserve.algorithms.lookalikes``). Every file is opened through
``confinement``; nothing here imports numpy.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from smserve.algorithms.confinement import open_file, regular_files
from smserve.algorithms.model_files import candidate_files, is_archive
from smserve.errors import ModelLoadError

HEAD_BYTES = 512
_JSON_START = re.compile(rb"\s*\{\s*[\"}]")


@dataclass(frozen=True, slots=True)
class ModelFile:
    """A model file: its name, size, first HEAD_BYTES bytes, and its path when on disk."""

    name: str
    size: int
    head: bytes
    path: Path | None = None

    @property
    def is_json(self) -> bool:
        return bool(_JSON_START.match(self.head))


def described(paths: Sequence[Path]) -> list[ModelFile]:
    """The files at ``paths``, each with its head; ModelLoadError when one cannot be read."""
    return [_described(path) for path in paths]


def model_files(model_dir: Path) -> list[ModelFile]:
    """The files a load of ``model_dir`` parses: its candidates, or, for a folder holding one
    archive alone, the archive's regular members (sorted by name)."""
    candidates = candidate_files(model_dir)
    if candidates:
        return described(candidates)
    archives = [p for p in _all_files(model_dir) if is_archive(p)]
    return _archive_members(archives[0]) if len(archives) == 1 else []


def _all_files(model_dir: Path) -> list[Path]:
    try:
        return regular_files(model_dir)
    except OSError as exc:
        raise ModelLoadError(f"cannot list {model_dir}: {exc}") from exc


def _described(path: Path) -> ModelFile:
    try:
        with open_file(path) as stream:
            head = stream.read(HEAD_BYTES)
            size = stream.seek(0, 2)
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return ModelFile(path.name, size, head, path)


def _archive_members(archive: Path) -> list[ModelFile]:
    files = []
    try:
        with open_file(archive) as stream, tarfile.open(fileobj=stream, mode="r:*") as tar:
            for member in tar:
                name = PurePosixPath(member.name).name
                if member.isfile() and not name.startswith(".") and not is_archive(Path(name)):
                    head = tar.extractfile(member).read(HEAD_BYTES)  # type: ignore[union-attr]
                    files.append(ModelFile(name, member.size, head))
    except (tarfile.TarError, OSError) as exc:
        raise ModelLoadError(f"{archive}: cannot read: {exc}") from exc
    return sorted(files, key=lambda f: f.name)
