"""``ModelInferRequest`` to the protocol's ``InferRequest``, and output tensors to a
``ModelInferResponse``: only what gRPC carries differently from REST; what the tensors mean is
``smserve.v2``'s (``tensors``, ``infer``).

Inputs come raw (``raw_input_contents``: one entry per input, in order, little-endian bytes;
what tritonclient always sends) or typed (``contents``, in the field the datatype names:
``fp32_contents`` for FP32, ``int_contents`` for INT8/16/32, ...). Outputs are raw when the
request was raw, as MLServer and KServe answer (tritonclient reads only raw outputs), or when
the request's parameter ``binary_data_output`` is true; else typed. One reply never mixes the
two: the protocol forbids it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from smserve.errors import InvalidInput
from smserve.v2.datatypes import datatype_of, input_dtype, little_endian
from smserve.v2.infer import OutputTensor
from smserve.v2.request import InferRequest, InputTensor, RequestedOutput, flag, shape_of
from smserve.v2grpc.protocol import ModelInferResponse

# The typed field of each datatype, and the numpy type of that field's values.
CONTENTS_FIELDS: Mapping[str, str] = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
}
FIELD_DTYPES: Mapping[str, np.dtype] = {
    "bool_contents": np.dtype(np.bool_),
    "int_contents": np.dtype(np.int32),
    "int64_contents": np.dtype(np.int64),
    "uint_contents": np.dtype(np.uint32),
    "uint64_contents": np.dtype(np.uint64),
    "fp32_contents": np.dtype(np.float32),
    "fp64_contents": np.dtype(np.float64),
}
RAW_OUTPUT = "binary_data_output"  # the REST door's request parameter, with its meaning


def infer_request(message: Any) -> InferRequest:
    """The request in ``message`` (a ModelInferRequest); raises InvalidInput."""
    raw = message.raw_input_contents
    if raw and len(raw) != len(message.inputs):
        raise InvalidInput(
            f"raw_input_contents has {len(raw)} entries for {len(message.inputs)} inputs: send "
            "one per input, in order (or typed contents for every input)"
        )
    if not message.inputs:
        raise InvalidInput("'inputs' must be a non-empty list of input tensors")
    inputs = tuple(
        _input(tensor, raw[index] if raw else None, index)
        for index, tensor in enumerate(message.inputs)
    )
    asked = flag(parameters(message.parameters), RAW_OUTPUT, "the request")
    binary = bool(raw) or asked
    return InferRequest(message.id, inputs, _outputs(message.outputs, binary), binary)


def parameters(entries: Mapping[str, Any]) -> dict[str, Any]:
    """A ``map<string, InferParameter>`` as plain values (None: a parameter with no value)."""
    return {key: _value(parameter) for key, parameter in entries.items()}


def _value(parameter: Any) -> Any:
    kind = parameter.WhichOneof("parameter_choice")
    return None if kind is None else getattr(parameter, kind)


def _input(tensor: Any, raw: bytes | None, index: int) -> InputTensor:
    where = f"input '{tensor.name}'"
    shape = shape_of(list(tensor.shape), where)
    if raw is None:
        return InputTensor(tensor.name, shape, tensor.datatype, _typed(tensor))
    if tensor.HasField("contents"):
        raise InvalidInput(
            f"{where} has both contents and raw_input_contents[{index}]: send one of them"
        )
    return InputTensor(
        tensor.name, shape, tensor.datatype, memoryview(raw), f"raw_input_contents[{index}]"
    )


def _typed(tensor: Any) -> np.ndarray:
    """The values of the ``contents`` field ``tensor.datatype`` names, in that field's type."""
    input_dtype(tensor.datatype, tensor.name)  # an unknown or refused datatype: its message
    field = CONTENTS_FIELDS[tensor.datatype]
    others = [f.name for f, _ in tensor.contents.ListFields() if f.name != field]
    if others:
        raise InvalidInput(
            f"input '{tensor.name}' is {tensor.datatype}: its values go in contents.{field} "
            f"(or raw_input_contents), not in contents.{others[0]}"
        )
    return np.array(getattr(tensor.contents, field), dtype=FIELD_DTYPES[field])


def _outputs(requested: Sequence[Any], binary: bool) -> tuple[RequestedOutput, ...] | None:
    if not requested:
        return None
    names = [output.name for output in requested]
    if len(set(names)) != len(names):
        raise InvalidInput(f"'outputs' names an output twice: {', '.join(names)}")
    return tuple(RequestedOutput(name, binary) for name in names)


def infer_response(
    model: str, version: int, request_id: str, outputs: Sequence[OutputTensor]
) -> Any:
    """The ModelInferResponse holding ``outputs``, in order."""
    response = ModelInferResponse(model_name=model, model_version=str(version), id=request_id)
    for tensor in outputs:
        values = tensor.values
        datatype = datatype_of(values.dtype)
        entry = response.outputs.add(name=tensor.name, datatype=datatype, shape=values.shape)
        if tensor.binary:
            response.raw_output_contents.append(little_endian(values).tobytes())
        else:
            getattr(entry.contents, CONTENTS_FIELDS[datatype]).extend(values.ravel().tolist())
    return response
