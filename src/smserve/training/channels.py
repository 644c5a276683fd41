"""Channels: ``inputdataconfig.json`` read into one :class:`Channel` per data channel.

A channel's content type comes from its ``ContentType`` entry; when that is missing (or there
is no ``inputdataconfig.json``, as in local runs, where the folders under ``input/data`` are
the channels) the algorithm's default applies. A channel's files are every regular file under
its folder, subfolders included, whose path has no part starting with ``.``, read in sorted
order of their relative paths. A channel that is a single file rather than a folder (the
SageMaker SDK v3's ``ModelTrainer`` mounts a one-file channel so, at
``/opt/ml/input/data/<channel>``) is that one file. Only File and FastFile input modes are
supported.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from smserve.errors import UnsupportedMediaType
from smserve.media import MediaType, parse_media_type
from smserve.training.failure import TrainingError
from smserve.training.paths import TrainingPaths

logger = logging.getLogger(__name__)

TRAIN = "train"
VALIDATION = "validation"
KNOWN_CHANNELS = (TRAIN, VALIDATION)
FILE_MODES = ("file", "fastfile")


@dataclass(frozen=True, slots=True)
class Channel:
    """One data channel: its name, folder, parsed content type, how libsvm indices map
    to columns (``SMSERVE_LIBSVM_INDEX_BASE``, as for serving, so both agree), and which
    Parquet column is the label (the ``label_column`` hyperparameter; None: the first)."""

    name: str
    path: Path
    media: MediaType
    libsvm_index_base: str = "0"
    label_column: str | None = None

    def files(self) -> list[Path]:
        """The channel's data files in read order; raises when there are none."""
        if self.path.is_file():  # a channel mounted as its one file
            return [self.path]
        if not self.path.is_dir():
            raise TrainingError(
                f"channel {self.name!r}: {self.path} does not exist (a channel is a folder "
                "of data files, or one data file)"
            )
        found = sorted(
            (p for p in self.path.rglob("*") if p.is_file() and not _hidden(p, self.path)),
            key=lambda p: p.relative_to(self.path).as_posix(),
        )
        if not found:
            raise TrainingError(f"channel {self.name!r}: folder {self.path} holds no data files")
        return found


def load_channels(
    paths: TrainingPaths, default_content_type: str, libsvm_index_base: str = "0"
) -> dict[str, Channel]:
    """The known channels (``train``, optional ``validation``) that this job provides.

    Raises TrainingError when the train channel is missing or a content type is unusable.
    """
    config = _read_config(paths)
    channels = {
        name: replace(
            _channel(name, paths.channel_dir(name), entry, default_content_type),
            libsvm_index_base=libsvm_index_base,
        )
        for name, entry in config.items()
        if _is_known(name)
    }
    if TRAIN not in channels:
        raise TrainingError(f"the {TRAIN!r} channel is required but was not provided")
    return channels


def _read_config(paths: TrainingPaths) -> dict[str, Mapping[str, Any]]:
    path = paths.input_data_config_file
    if not path.is_file():
        return {name: {} for name in KNOWN_CHANNELS if paths.channel_dir(name).exists()}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise TrainingError(f"{path} is not a readable JSON file: {exc}") from exc
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise TrainingError(f"{path} must map each channel name to an object")
    return raw


def _is_known(name: str) -> bool:
    if name in KNOWN_CHANNELS:
        return True
    logger.warning("channel %r is not used (known channels: %s)", name, ", ".join(KNOWN_CHANNELS))
    return False


def _channel(name: str, path: Path, entry: Mapping[str, Any], default: str) -> Channel:
    mode = str(entry.get("TrainingInputMode") or "File")
    if mode.lower() not in FILE_MODES:
        raise TrainingError(
            f"channel {name!r}: TrainingInputMode {mode!r} is not supported; use File or FastFile"
        )
    content_type = str(entry.get("ContentType") or default)
    try:
        media = parse_media_type(content_type)
    except UnsupportedMediaType as exc:
        raise TrainingError(f"channel {name!r}: {exc.message}") from exc
    return Channel(name, path, media)


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)
