"""The model repository: every configured model, looked up by name, polled for new versions.

Worker consistency. Each gunicorn worker builds its own Repository and polls the same
directories itself, so all workers converge on the same versions within one poll interval
(``SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS``). During that window two workers may answer with
different versions; every response names the version that answered (``X-Model-Version``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Protocol

from smserve.errors import ModelNotFound, UnknownLabel
from smserve.repository.config import ModelConfig
from smserve.repository.loading import ModelLoader, ServedModel
from smserve.repository.model import ModelVersions
from smserve.repository.status import State, VersionStatus

logger = logging.getLogger(__name__)


class Model(Protocol):
    @property
    def name(self) -> str: ...
    def served(self, version: int | None, label: str | None) -> ServedModel: ...
    def statuses(self, version: int | None, label: str | None) -> list[VersionStatus]: ...
    def refresh(self) -> None: ...


class FixedModel:
    """One version that never changes: a model loaded before the app was built."""

    def __init__(self, served: ServedModel) -> None:
        self._served = served

    @property
    def name(self) -> str:
        return self._served.name

    def served(self, version: int | None, label: str | None) -> ServedModel:
        self._check(version, label)
        return self._served

    def statuses(self, version: int | None, label: str | None) -> list[VersionStatus]:
        self._check(version, label)
        return [VersionStatus(self._served.version, State.AVAILABLE)]

    def _check(self, version: int | None, label: str | None) -> None:
        if label is not None:
            raise UnknownLabel(self.name, label)
        if version is not None and version != self._served.version:
            raise ModelNotFound(self.name, version, whole_model=False)

    def refresh(self) -> None:
        pass


class Repository:
    """Models by name, each with its versions (``repository.modes.Models``)."""

    def __init__(self, models: Sequence[Model]) -> None:
        self.models = {model.name: model for model in models}
        self._poller: _Poller | None = None

    @classmethod
    def from_configs(cls, configs: Sequence[ModelConfig], loader: ModelLoader) -> Repository:
        return cls([ModelVersions(config, loader) for config in configs])

    @property
    def default_model(self) -> str:
        """The first configured model: the one ``/invocations`` answers with."""
        return next(iter(self.models))

    def names(self) -> tuple[str, ...]:
        return tuple(self.models)

    def resolve(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> ServedModel:
        """The version that answers: the label's, ``version``, or the newest available;
        raises ModelNotFound or UnknownLabel."""
        model = self.models.get(name)
        if model is None:
            if label is not None:
                raise UnknownLabel(name, label)
            raise ModelNotFound(name, version)
        return model.served(version, label)

    def statuses(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> list[VersionStatus]:
        model = self.models.get(name)
        if model is None:
            raise ModelNotFound(name, version)
        return model.statuses(version, label)

    def refresh(self) -> None:
        """One pass over every model; a model's failure never stops the others."""
        for model in self.models.values():
            try:
                model.refresh()
            except Exception:
                logger.exception("model %s: refresh failed", model.name)

    def start_polling(self, interval_s: float) -> None:
        """Refresh every ``interval_s`` seconds on a daemon thread (0: never)."""
        if interval_s > 0 and self._poller is None:
            self._poller = _Poller(self, interval_s)
            self._poller.start()

    def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None


class _Poller(threading.Thread):
    def __init__(self, repository: Repository, interval_s: float) -> None:
        super().__init__(name="smserve-model-poller", daemon=True)
        self.repository = repository
        self.interval_s = interval_s
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            self.repository.refresh()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=max(self.interval_s, 1.0) * 2)
