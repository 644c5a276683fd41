"""One model's versions: their states, the ones serving, and hot swaps between them.

``refresh`` (run at start-up, then by the poller) compares the versions on disk with the
policy's choice. It loads each chosen version that is not loaded (START -> LOADING ->
AVAILABLE, or END with the error when loading fails; a failed version is retried only once
its files change). Only then does it retire versions the policy no longer wants
(UNLOADING -> END), and only if one wanted version is AVAILABLE, so a model never stops
answering because its newest version failed or is still loading.

Requests read an immutable snapshot of the AVAILABLE versions, replaced whole under a lock:
a request holds the version it started with until it finishes, while new requests see the
new snapshot. Retiring a version drops it from the snapshot; its memory goes when the last
request using it is done.

Labels (version_labels) resolve only to AVAILABLE versions: a label whose version is not
available is unrecognized, as TF Serving refuses to assign it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smserve.errors import ModelLoadError, ModelNotFound, UnknownLabel
from smserve.repository.config import ModelConfig
from smserve.repository.loading import ModelLoader, ServedModel
from smserve.repository.status import State, VersionStatus
from smserve.repository.versions import Fingerprint, fingerprint, versions_on_disk

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Failure:
    status: VersionStatus
    fingerprint: Fingerprint


class ModelVersions:
    """The versions of one configured model (thread-safe)."""

    def __init__(self, config: ModelConfig, loader: ModelLoader) -> None:
        self.config = config
        self.loader = loader
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self._available: Mapping[int, ServedModel] = {}
        self._states: dict[int, VersionStatus] = {}
        self._failures: dict[int, _Failure] = {}

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def available(self) -> Mapping[int, ServedModel]:
        """The current snapshot (never mutated; replaced on change)."""
        return self._available

    def served(self, version: int | None, label: str | None) -> ServedModel:
        """The version to answer with: the label's, the given one, or the newest available."""
        available = self._available
        if label is not None:
            version = self.label_version(label)
        if version is None:
            if not available:
                raise ModelNotFound(self.name, None, whole_model=False)
            return available[max(available)]
        if version not in available:
            raise ModelNotFound(self.name, version, whole_model=False)
        return available[version]

    def label_version(self, label: str) -> int:
        version = self.config.labels.get(label)
        if version is None or version not in self._available:
            raise UnknownLabel(self.name, label)
        return version

    def statuses(self, version: int | None, label: str | None) -> list[VersionStatus]:
        with self._lock:
            states = dict(self._states)
        if not states:
            raise ModelNotFound(self.name, version)
        if label is not None:
            version = self.label_version(label)
        if version is None:
            return list(states.values())
        if version not in states:
            raise ModelNotFound(self.name, version, whole_model=False)
        return [states[version]]

    def refresh(self) -> None:
        """One pass: load wanted versions, then retire unwanted ones (see the module doc)."""
        with self._refreshing:
            on_disk = versions_on_disk(self.config)
            wanted = self.config.policy.select(on_disk)
            for version in sorted(wanted, reverse=True):
                if version not in self._available and self._should_load(version, on_disk):
                    self._load(version, on_disk)
            self._retire(wanted)

    def _should_load(self, version: int, on_disk: Mapping[int, Path]) -> bool:
        failure = self._failures.get(version)
        return failure is None or failure.fingerprint != fingerprint(on_disk[version])

    def _load(self, version: int, on_disk: Mapping[int, Path]) -> None:
        path = on_disk[version]
        self._set(VersionStatus(version, State.START))
        self._set(VersionStatus(version, State.LOADING))
        before = fingerprint(path)
        try:
            served = self.loader.load(self.name, version, path, self.config.platform)
        except Exception as exc:  # any failure is this version's END, never the server's
            self._fail(version, exc, before)
            return
        with self._lock:
            self._available = {**self._available, version: served}
            self._states[version] = VersionStatus(version, State.AVAILABLE)
            self._failures.pop(version, None)
        logger.info("model %s: version %d is available", self.name, version)

    def _fail(self, version: int, exc: Exception, before: Fingerprint) -> None:
        code = "INVALID_ARGUMENT" if isinstance(exc, ModelLoadError) else "UNKNOWN"
        message = str(exc) or type(exc).__name__
        status = VersionStatus(version, State.END, code, message)
        with self._lock:
            self._states[version] = status
            self._failures[version] = _Failure(status, before)
        log = logger.warning if isinstance(exc, ModelLoadError) else logger.exception
        log("model %s: version %d failed to load: %s", self.name, version, message)

    def _retire(self, wanted: set[int]) -> None:
        available = self._available
        if wanted and not wanted & set(available):
            return  # keep serving the old versions until a wanted one is available
        for version in sorted(set(available) - wanted):
            self._set(VersionStatus(version, State.UNLOADING))
            with self._lock:
                self._available = {v: s for v, s in self._available.items() if v != version}
            self._set(VersionStatus(version, State.END))
            logger.info("model %s: version %d retired", self.name, version)

    def _set(self, status: VersionStatus) -> None:
        with self._lock:
            self._states[status.version] = status
