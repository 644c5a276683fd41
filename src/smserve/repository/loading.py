"""Loading one model version: its Algorithm, InferenceService and output descriptions.

Every load is reported to a ``LoadObserver`` (the metrics count loads, their duration, and
the multi-model refusals and unloads), which the repository knows only by this protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Protocol

from smserve.algorithms.base import Algorithm
from smserve.algorithms.confinement import confined
from smserve.algorithms.probe import output_specs
from smserve.codecs import CodecRegistry, default_registry
from smserve.config import Settings
from smserve.resources import return_freed_memory
from smserve.service import InferenceService
from smserve.types import OutputSpec

# (directory, platform or None to detect) -> Algorithm; raises ModelLoadError
AlgorithmLoader = Callable[[Path, str | None], Algorithm]


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class ServedModel:
    """One AVAILABLE version, the same for every door: ``service`` answers with
    ``algorithm``; ``outputs`` describes every output it can produce, default ones first.
    Compared and hashed by identity, so a door may cache its own view of it."""

    name: str
    version: int
    service: InferenceService
    path: Path
    outputs: Mapping[str, OutputSpec]

    @property
    def algorithm(self) -> Algorithm:
        return self.service.algorithm


class LoadObserver(Protocol):
    """What happens to models, as the metrics count it."""

    def model_loaded(self, seconds: float, succeeded: bool) -> None: ...

    def model_refused(self) -> None: ...

    def model_unloaded(self) -> None: ...


class Unobserved:
    """A LoadObserver that keeps nothing (where no metrics are kept)."""

    def model_loaded(self, seconds: float, succeeded: bool) -> None:
        return None

    def model_refused(self) -> None:
        return None

    def model_unloaded(self) -> None:
        return None


def serve(name: str, version: int, service: InferenceService, path: Path) -> ServedModel:
    """Serve a built ``service`` as ``name`` version ``version`` (learns its outputs)."""
    return ServedModel(name, version, service, path, output_specs(service.algorithm))


class ModelLoader:
    """Builds ServedModels; ``algorithm_loader`` replaces ``load_algorithm`` in tests."""

    def __init__(
        self,
        settings: Settings,
        algorithm_loader: AlgorithmLoader | None = None,
        registry: CodecRegistry | None = None,
        observer: LoadObserver | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry or default_registry(settings)
        self.observer: LoadObserver = observer or Unobserved()
        self._load = algorithm_loader or self._load_algorithm

    def _load_algorithm(self, path: Path, platform: str | None) -> Algorithm:
        from smserve.algorithms.loading import load_algorithm

        settings = self.settings if platform is None else self.settings.replace(algorithm=platform)
        return load_algorithm(settings, path)

    def load(
        self, name: str, version: int, path: Path, platform: str | None, within: Path | None = None
    ) -> ServedModel:
        """Load the files in ``path``, reading nothing outside ``within`` when it is given
        (``algorithms.confinement``); raises ModelLoadError (or whatever the loader raises)."""
        started = perf_counter()
        try:
            with confined(within):
                algorithm = self._load(path, platform)
            served = self.wrap(name, version, algorithm, path)
        except Exception:
            self.observer.model_loaded(perf_counter() - started, succeeded=False)
            raise
        self.observer.model_loaded(perf_counter() - started, succeeded=True)
        return_freed_memory()  # what parsing the files freed, so a worker keeps only models
        return served

    def wrap(self, name: str, version: int, algorithm: Algorithm, path: Path) -> ServedModel:
        """Serve an already loaded ``algorithm``."""
        service = InferenceService(algorithm, self.registry, self.settings)
        return serve(name, version, service, path)
