"""The SageMaker door's answers without a model's body: errors, empty bodies and JSON.

An error is ``{"error": "<message>", "message": "<message>"}``: ``message`` repeats ``error``
because botocore reads a JSON error's text only from a ``message`` key, so boto3 and the
SageMaker SDK pointed at the container show our message in ``ClientError``."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from smserve.doors import DoorReply, Envelope
from smserve.errors import ModelNotFound
from smserve.failures import Failure, describe
from smserve.media import JSON

ENVELOPE = Envelope("message", ("error", "message"))


def error_body(message: str) -> bytes:
    return ENVELOPE.body(message)


def failure_reply(failure: Failure, headers: tuple[tuple[str, str], ...] = ()) -> DoorReply:
    return DoorReply(failure.status, error_body(failure.message), JSON, headers)


def error_reply(exc: Exception, where: str, model: str = "", verb: str | None = None) -> DoorReply:
    """The answer to ``exc``; an unknown model is worded ``Model not found: <name>``."""
    failure = describe(exc, where)
    if isinstance(exc, ModelNotFound):
        failure = Failure(failure.status, f"Model not found: {exc.model_name}")
    return DoorReply(failure.status, error_body(failure.message), JSON, model=model, verb=verb)


def json_reply(value: Any, status: int = HTTPStatus.OK) -> DoorReply:
    return DoorReply(status, json.dumps(value).encode(), JSON)


def empty_reply(status: int) -> DoorReply:
    """An empty body with no Content-Type (there is nothing to describe)."""
    return DoorReply(status, b"", None)
