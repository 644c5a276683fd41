"""Signature definitions (TF Serving's SignatureDef) and their proto3-JSON form.

Our models are not SavedModels, so each loaded model gets synthesized signatures (see
``servable``); this module only holds the value types and their JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from smserve.types import OutputSpec

PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"

DEFAULT_SIGNATURE = "serving_default"
CLASSIFY_SIGNATURE = "classification"
REGRESS_SIGNATURE = "regression"
EXPLAIN_SIGNATURE = "explain"  # a predict signature: default outputs plus contributions

_DTYPES = {"f": {4: "DT_FLOAT", 8: "DT_DOUBLE"}, "i": {4: "DT_INT32", 8: "DT_INT64"}}


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A TensorInfo: dtype name, shape (-1 for the batch dimension; None: unknown rank)."""

    dtype: str
    shape: tuple[int, ...] | None
    name: str

    def to_json(self) -> dict[str, Any]:
        dims = [{"size": str(size), "name": ""} for size in self.shape or ()]
        shape = {"dim": dims, "unknown_rank": self.shape is None}
        return {"dtype": self.dtype, "tensor_shape": shape, "name": self.name}


@dataclass(frozen=True, slots=True)
class Signature:
    method_name: str
    inputs: Mapping[str, TensorSpec]
    outputs: Mapping[str, TensorSpec]

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": {k: v.to_json() for k, v in self.inputs.items()},
            "outputs": {k: v.to_json() for k, v in self.outputs.items()},
            "method_name": self.method_name,
            "defaults": {},
        }


def dtype_name(dtype: np.dtype[Any]) -> str:
    """The TF DataType name for an output's dtype (DT_STRING for text)."""
    if dtype.kind == "b":
        return "DT_BOOL"
    return _DTYPES.get(dtype.kind, {}).get(dtype.itemsize, "DT_STRING")


def output_spec(name: str, spec: OutputSpec) -> TensorSpec:
    """The TensorInfo of one output."""
    return TensorSpec(dtype_name(spec.dtype), (-1, *spec.shape), f"{name}:0")


def signature_map_json(signatures: Mapping[str, Signature]) -> dict[str, Any]:
    """A SignatureDefMap message: note the doubled ``signature_def`` key in the metadata."""
    return {"signature_def": {name: sig.to_json() for name, sig in signatures.items()}}
