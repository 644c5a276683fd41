"""A failed RPC's gRPC status code and message, from the one mapping every door shares
(``failures.describe``): the message is the REST door's, the code the HTTP status's nearest
gRPC equivalent (as Triton and KServe map them)."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus

import grpc

from smserve.errors import ModelNotFound
from smserve.failures import describe
from smserve.v2.infer import not_found_message

CODES: Mapping[int, grpc.StatusCode] = {
    HTTPStatus.BAD_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    HTTPStatus.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    HTTPStatus.CONFLICT: grpc.StatusCode.ALREADY_EXISTS,
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: grpc.StatusCode.INVALID_ARGUMENT,
    HTTPStatus.NOT_ACCEPTABLE: grpc.StatusCode.INVALID_ARGUMENT,
    HTTPStatus.SERVICE_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    HTTPStatus.INSUFFICIENT_STORAGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def status_of(exc: Exception, method: str) -> tuple[grpc.StatusCode, str]:
    """The code and message for ``exc``, raised answering ``method``; logged as every door
    logs (a server fault with its traceback, a client's mistake at debug level)."""
    if isinstance(exc, ModelNotFound):
        return grpc.StatusCode.NOT_FOUND, not_found_message(exc)
    failure = describe(exc, f"gRPC {method}")
    return CODES.get(failure.status, grpc.StatusCode.INTERNAL), failure.message
