"""Model versions on disk: ``<base_path>/<N>/`` where N is a non-negative integer.

Other entries are ignored, as TF Serving ignores them. Two spellings of one number (``1``
and ``001``) are the same version; the one listed last wins, with a warning. A fingerprint
(every file's relative path, size and modification time) tells whether a version's files
changed since a failed load, so a copy that was still in progress is retried once complete.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from smserve.repository.config import ModelConfig

logger = logging.getLogger(__name__)

SINGLE_VERSION = 1  # the version number of a SageMaker model directory
_INT64_MAX = 2**63 - 1

Fingerprint = tuple[tuple[str, int, int], ...]


def versions_on_disk(config: ModelConfig) -> dict[int, Path]:
    """Version number -> directory, for ``config``'s base path (empty if it is missing)."""
    if config.single_version:
        return {SINGLE_VERSION: config.base_path} if config.base_path.exists() else {}
    try:
        entries = sorted(os.scandir(config.base_path), key=lambda e: e.name)
    except OSError:
        return {}
    found: dict[int, Path] = {}
    for entry in entries:
        number = _version_number(entry.name)
        if number is None or not entry.is_dir():
            continue
        if number in found:
            logger.warning(
                "model %s: %s and %s are both version %d",
                config.name,
                found[number],
                entry.path,
                number,
            )
        found[number] = Path(entry.path)
    return found


def _version_number(name: str) -> int | None:
    if not name.isascii() or not name.isdigit():
        return None
    number = int(name)
    return number if number <= _INT64_MAX else None


def fingerprint(path: Path) -> Fingerprint:
    """What changes when any file under ``path`` changes (empty if it cannot be read)."""
    if path.is_file():
        stat = path.stat()
        return ((path.name, stat.st_size, stat.st_mtime_ns),)
    entries = []
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = Path(root, name)
            try:
                stat = full.stat()
            except OSError:
                continue
            entries.append((str(full.relative_to(path)), stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


def size_bytes(path: Path) -> int:
    """The bytes of every file under ``path`` (the file itself when it is one)."""
    return sum(size for _name, size, _mtime in fingerprint(path))
