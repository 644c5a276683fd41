"""What the Open Inference Protocol means, whatever carries it: its REST door (``v2.api``) and
its gRPC door (``smserve.v2grpc``) both answer from here, so they cannot give different
numbers, outputs or messages.

An infer request, once its transport has parsed it into an ``InferRequest``, walks one way:
its one input tensor -> the model's float32 matrix -> the model's InferenceService -> the
requested (or default) output tensors. Beside it: model metadata, server readiness and the
words for a model or version that is not served (Triton's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

import smserve
from smserve.algorithms.base import Algorithm
from smserve.budget import UNLIMITED, RequestBudget
from smserve.errors import ModelNotFound, ModelNotReady
from smserve.repository.status import VersionStatus
from smserve.service import InferenceService
from smserve.types import Batch, Prediction
from smserve.v2.datatypes import MODEL_DATATYPE
from smserve.v2.outputs import Spec, known_keys, output_metadata, protocol_name, selected_keys
from smserve.v2.request import InferRequest
from smserve.v2.tensors import decode_input, only_input, wrong_shape

SERVER_NAME = "smserve"
EXTENSIONS = ("binary_tensor_data",)
INPUT_NAME = "input__0"  # the name Triton's FIL backend gives a tree model's one input


class Served(Protocol):
    """One loaded model version (``smserve.repository.loading.ServedModel``)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def algorithm(self) -> Algorithm: ...
    @property
    def service(self) -> InferenceService: ...
    @property
    def outputs(self) -> Mapping[str, Spec]: ...


class ModelSource(Protocol):
    """Where a door finds models (``smserve.repository.modes.Models``)."""

    def names(self) -> tuple[str, ...]: ...

    def resolve(self, name: str, version: int | None = None) -> Served:
        """Raises ModelNotFound (or ModelNotReady)."""
        ...

    def statuses(self, name: str) -> Sequence[VersionStatus]:
        """Every version's state; raises ModelNotFound."""
        ...


@dataclass(frozen=True, slots=True)
class OutputTensor:
    """One answer tensor; ``binary``: sent as raw little-endian bytes, not as typed values."""

    name: str
    values: np.ndarray
    binary: bool


def infer(
    served: Served, request: InferRequest, budget: RequestBudget = UNLIMITED
) -> list[OutputTensor]:
    """The request's outputs from ``served``; raises InvalidInput (or the service's errors),
    or PayloadTooLarge when the input's declared shape is over the request's ``budget``."""
    tensor = only_input(request.inputs)
    values = decode_input(tensor, budget)
    batch = served.service.tensor_batch(values, tensor.name, wrong_shape(tensor.name))
    return _run(served, batch, request)


def _run(served: Served, batch: Batch, request: InferRequest) -> list[OutputTensor]:
    """The requested outputs (or the default ones), in order."""
    service = served.service
    if request.outputs is None:
        prediction = service.predict(batch)
        return [
            OutputTensor(protocol_name(key), values, request.binary_output)
            for key, values in prediction.items()
        ]
    names = [output.name for output in request.outputs]
    keys = selected_keys(names, known_keys(service, served.outputs))
    prediction = _predict(service, batch, keys)
    return [
        OutputTensor(output.name, prediction.outputs[key], output.binary)
        for output, key in zip(request.outputs, keys, strict=True)
    ]


def _predict(service: InferenceService, batch: Batch, keys: tuple[str, ...]) -> Prediction:
    """A selectable model computes only ``keys``; another gives its outputs, and picks."""
    if not service.output_keys:
        return service.predict(batch)
    return service.predict(batch, tuple(dict.fromkeys(keys)))


def server_metadata() -> dict[str, object]:
    """``$metadata_server_response``."""
    return {"name": SERVER_NAME, "version": smserve.__version__, "extensions": list(EXTENSIONS)}


def model_metadata(served: Served, versions: Sequence[int]) -> dict[str, object]:
    """``$metadata_model_response``: the available ``versions``, one FP32 input
    [-1, n_features] and every output."""
    width = served.algorithm.n_features
    return {
        "name": served.name,
        "versions": [str(version) for version in versions],
        "platform": served.algorithm.name,
        "inputs": [{"name": INPUT_NAME, "datatype": MODEL_DATATYPE, "shape": [-1, width or -1]}],
        "outputs": output_metadata(served.outputs),
    }


def available_versions(models: ModelSource, served: Served) -> tuple[int, ...]:
    """The model's versions that answer now (the one that answered at least)."""
    ready = {status.version for status in models.statuses(served.name) if status.ready}
    return tuple(sorted(ready | {served.version}))


def server_ready(models: ModelSource) -> bool:
    """Ready when every model the repository names has a version that answers."""
    try:
        for name in models.names():
            models.resolve(name)
    except (ModelNotFound, ModelNotReady):
        return False
    return True


def model_ready(models: ModelSource, name: str, version: int | None) -> bool:
    """Whether ``name`` (at ``version``, None: its newest) answers now."""
    try:
        models.resolve(name, version)
    except (ModelNotFound, ModelNotReady):
        return False
    return True


def not_found_message(exc: ModelNotFound) -> str:
    """Triton's words for a model or version it does not serve."""
    name = exc.model_name
    if exc.version is not None:
        return f"Request for unknown model: '{name}' version {exc.version} is not found"
    if not exc.whole_model:
        return f"Request for unknown model: '{name}' has no available versions"
    return f"Request for unknown model: '{name}' is not found"
