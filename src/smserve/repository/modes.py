"""The three ways a server finds its models, behind the one interface every door reads.

``open_models`` picks the mode from the settings:

* multi-model endpoint (SAGEMAKER_MULTI_MODEL): the registry of ``repository.mme``; every
  request names its model (``default_model`` is None);
* a TF Serving layout (SMSERVE_MODEL_CONFIG_FILE, or MODEL_NAME / MODEL_BASE_PATH): the
  versioned repository, loaded now and then polled; the default model is the first configured;
* otherwise the SageMaker model directory, as one model ``model`` with version 1.

Lookups raise protocol-neutral errors (ModelNotFound, UnknownLabel) that each door words in
its own protocol's terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from smserve.config import Settings
from smserve.repository.config import DEFAULT_MODEL_NAME, model_configs
from smserve.repository.loading import ModelLoader, ServedModel, serve
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.repository import FixedModel, Repository
from smserve.repository.status import VersionStatus
from smserve.service import InferenceService


class Models(Protocol):
    """Which loaded model serves (name, version | label | newest)."""

    @property
    def default_model(self) -> str | None:
        """The model a request that names none gets; None when every request must name one."""
        ...

    def names(self) -> tuple[str, ...]:
        """Every model served now."""
        ...

    def resolve(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> ServedModel:
        """The version that answers; raises ModelNotFound, UnknownLabel or ModelNotReady."""
        ...

    def statuses(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> Sequence[VersionStatus]:
        """Every version's state (or the one asked for); raises ModelNotFound, UnknownLabel."""
        ...


def uses_model_dir(settings: Settings) -> bool:
    """True when the server serves SM_MODEL_DIR (no multi-model, no TF Serving layout)."""
    layout = settings.model_config_file or settings.model_name or settings.model_base_path
    return not settings.multi_model and layout is None


def open_models(
    settings: Settings, service: InferenceService | None = None, loader: ModelLoader | None = None
) -> Models:
    """The models ``settings`` describe (``service``: SM_MODEL_DIR's, already built). Raises
    StartupError when the SageMaker model cannot load or a TF Serving model list is invalid;
    needs ``settings.runtime_dir`` (``runtime.prepare``) for a multi-model endpoint."""
    loader = loader or ModelLoader(settings)
    if uses_model_dir(settings):
        return Repository([FixedModel(_model_dir(settings, service, loader))])
    if settings.multi_model:
        assert settings.runtime_dir is not None, "runtime.prepare(settings) first"
        return MultiModelRegistry(loader, settings.runtime_dir / "mme")
    repository = Repository.from_configs(model_configs(settings), loader)
    repository.refresh()
    repository.start_polling(settings.poll_interval_s)
    return repository


def _model_dir(
    settings: Settings, service: InferenceService | None, loader: ModelLoader
) -> ServedModel:
    if service is None:
        return loader.load(DEFAULT_MODEL_NAME, 1, settings.model_dir, None)
    return serve(DEFAULT_MODEL_NAME, 1, service, settings.model_dir)
