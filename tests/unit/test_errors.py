"""The error hierarchy: each class's HTTP status, and which errors are the client's."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from smserve import errors

STATUSES = [
    (errors.ServingError, HTTPStatus.INTERNAL_SERVER_ERROR),
    (errors.ClientError, HTTPStatus.BAD_REQUEST),
    (errors.DecodeError, HTTPStatus.BAD_REQUEST),
    (errors.InvalidInput, HTTPStatus.BAD_REQUEST),
    (errors.UnsupportedMediaType, HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    (errors.NotAcceptable, HTTPStatus.NOT_ACCEPTABLE),
    (errors.PayloadTooLarge, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (errors.ModelNotFound, HTTPStatus.NOT_FOUND),
    (errors.Conflict, HTTPStatus.CONFLICT),
    (errors.ModelNotReady, HTTPStatus.SERVICE_UNAVAILABLE),
    (errors.InsufficientStorage, HTTPStatus.INSUFFICIENT_STORAGE),
    (errors.PredictionError, HTTPStatus.INTERNAL_SERVER_ERROR),
]


@pytest.mark.parametrize(("cls", "status"), STATUSES, ids=lambda v: getattr(v, "__name__", ""))
def test_status(cls: type[errors.ServingError], status: HTTPStatus) -> None:
    exc = cls("what to fix")
    assert exc.status == status
    assert exc.message == str(exc) == "what to fix"


def test_every_serving_error_is_listed() -> None:
    listed = {cls for cls, _ in STATUSES}
    defined = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.ServingError)
    }
    assert defined == listed


@pytest.mark.parametrize(
    "cls",
    [c for c, status in STATUSES if 400 <= status < 500 and c is not errors.ClientError],
    ids=lambda c: c.__name__,
)
def test_4xx_errors_are_client_errors(cls: type[errors.ServingError]) -> None:
    assert issubclass(cls, errors.ClientError)


@pytest.mark.parametrize("cls", [errors.ConfigError, errors.ModelLoadError])
def test_startup_errors_are_not_http_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, errors.StartupError)
    assert not issubclass(cls, errors.ServingError)
