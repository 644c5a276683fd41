"""Loading one model version: the Algorithm, its TF Serving view and its InferenceService."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from smserve.algorithms.base import Algorithm
from smserve.codecs import CodecRegistry, default_registry
from smserve.config import Settings
from smserve.service import InferenceService
from smserve.tfserving.servable import Servable, build_servable

# (directory, platform or None to detect) -> Algorithm; raises ModelLoadError
AlgorithmLoader = Callable[[Path, str | None], Algorithm]


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One AVAILABLE version: answers TF Serving requests (``servable``) and SageMaker
    invocations (``service``) with the same Algorithm instance."""

    name: str
    version: int
    servable: Servable
    service: InferenceService
    path: Path

    @property
    def algorithm(self) -> Algorithm:
        return self.servable.algorithm


class ModelLoader:
    """Builds ServedModels; ``algorithm_loader`` replaces ``load_algorithm`` in tests."""

    def __init__(
        self,
        settings: Settings,
        algorithm_loader: AlgorithmLoader | None = None,
        registry: CodecRegistry | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry or default_registry(settings)
        self._load = algorithm_loader or self._load_algorithm

    def _load_algorithm(self, path: Path, platform: str | None) -> Algorithm:
        from smserve.algorithms import load_algorithm

        settings = self.settings if platform is None else self.settings.replace(algorithm=platform)
        return load_algorithm(settings, path)

    def load(self, name: str, version: int, path: Path, platform: str | None) -> ServedModel:
        """Load the files in ``path``; raises ModelLoadError (or whatever the loader raises)."""
        return self.wrap(name, version, self._load(path, platform), path)

    def wrap(self, name: str, version: int, algorithm: Algorithm, path: Path) -> ServedModel:
        """Serve an already loaded ``algorithm``."""
        service = InferenceService(algorithm, self.registry, self.settings)
        return ServedModel(name, version, build_servable(algorithm), service, path)
