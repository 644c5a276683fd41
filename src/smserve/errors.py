"""Errors that map to HTTP responses. Messages are client-safe; tracebacks are only logged.

* ServingError                  500  a true server fault (fixed message to clients)
  x ClientError                 400
    + DecodeError               400  malformed body (bad CSV cell, bad RecordIO magic, invalid JSON)
    + InvalidInput              400  wrong feature count, empty batch, bad TF Serving request
    + UnsupportedMediaType      415  unknown Content-Type, or an unsupported parameter value
    + NotAcceptable             406  nothing in Accept is offered
    + PayloadTooLarge           413  body over the configured limit
    + ModelNotFound             404  unknown model name or version (each door words it)
    + UnknownLabel              400  a version label the model does not have (TF Serving)
    + Conflict                  409  model already loaded (multi-model endpoints)
  x ModelNotReady               503  this worker has not finished loading
  x InsufficientStorage         507  another model would exceed the memory budget
  x PredictionError             500  the algorithm failed on a valid batch
* StartupError                       not HTTP: config or model loading failed; the process exits
  + ConfigError                      a setting has a bad value (names the variable)
  + ModelLoadError                   a model file cannot be loaded (names the file and the reason)
"""

from __future__ import annotations

from http import HTTPStatus
from typing import ClassVar

EXCERPT_CHARS = 64  # of a client's text quoted in a message (a name, a token, a value)
MESSAGE_CHARS = 2048  # of a whole message; longer ones keep their start and end


def excerpt(text: str, most: int = EXCERPT_CHARS) -> str:
    """``text`` as an error message may quote it: at most ``most`` characters, the cut
    said. A client's value can be megabytes long; its answer must not be."""
    if len(text) <= most:
        return text
    return f"{text[:most]}...({len(text) - most} more characters)"


def bounded(message: str) -> str:
    """``message`` cut to ``MESSAGE_CHARS`` in the middle (the start says what, the end how
    to fix it): the last guard, for a message that quotes more than it should."""
    if len(message) <= MESSAGE_CHARS:
        return message
    half = MESSAGE_CHARS // 2
    return f"{message[:half]} ...({len(message) - 2 * half} characters cut)... {message[-half:]}"


class ServingError(Exception):
    """Base of every error a request can end with; ``status`` picks the HTTP status."""

    status: ClassVar[HTTPStatus] = HTTPStatus.INTERNAL_SERVER_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ClientError(ServingError):
    status = HTTPStatus.BAD_REQUEST


class DecodeError(ClientError):
    status = HTTPStatus.BAD_REQUEST


class InvalidInput(ClientError):
    status = HTTPStatus.BAD_REQUEST


class UnsupportedMediaType(ClientError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE


class NotAcceptable(ClientError):
    status = HTTPStatus.NOT_ACCEPTABLE


class PayloadTooLarge(ClientError):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE

    @classmethod
    def over(cls, limit_bytes: int) -> PayloadTooLarge:
        """The error for a body over ``limit_bytes``, worded the same by every layer."""
        return cls(
            f"request body exceeds the {limit_bytes}-byte limit ({limit_bytes // 1048576} MiB); "
            "send fewer records per request or raise SAGEMAKER_MAX_PAYLOAD_IN_MB"
        )


class ModelNotFound(ClientError):
    """No loaded model answers for ``model_name``: ``version`` is the version asked for (None:
    the newest). ``whole_model``: nothing at all is known under the name (else the name is
    known but not that version, or no version is available yet). The message is neutral;
    each front door words the error in its own protocol's terms from these fields."""

    status = HTTPStatus.NOT_FOUND

    def __init__(
        self, model_name: str, version: int | None = None, *, whole_model: bool = True
    ) -> None:
        super().__init__(_not_found_message(model_name, version, whole_model))
        self.model_name = model_name
        self.version = version
        self.whole_model = whole_model


def _not_found_message(name: str, version: int | None, whole_model: bool) -> str:
    if whole_model:
        return f"model {name!r} is not served"
    if version is None:
        return f"model {name!r} has no version available"
    return f"model {name!r} has no version {version}"


class UnknownLabel(ClientError):
    """``label`` names no available version of ``model_name``."""

    status = HTTPStatus.BAD_REQUEST

    def __init__(self, model_name: str, label: str) -> None:
        super().__init__(f"model {model_name!r} has no available version labelled {label!r}")
        self.model_name = model_name
        self.label = label


class Conflict(ClientError):
    status = HTTPStatus.CONFLICT


class ModelNotReady(ServingError):
    status = HTTPStatus.SERVICE_UNAVAILABLE


class InsufficientStorage(ServingError):
    status = HTTPStatus.INSUFFICIENT_STORAGE


class PredictionError(ServingError):
    status = HTTPStatus.INTERNAL_SERVER_ERROR


class StartupError(Exception):
    """Raised before serving starts; the process prints the message and exits non-zero."""


class ConfigError(StartupError):
    pass


class ModelLoadError(StartupError):
    pass
