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
    (errors.UnknownLabel, HTTPStatus.BAD_REQUEST),
]
# Built from fields each door words its own way, not from a message.
STRUCTURED = (errors.ModelNotFound, errors.UnknownLabel)


@pytest.mark.parametrize(
    ("cls", "status"),
    [(cls, status) for cls, status in STATUSES if cls not in STRUCTURED],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_status(cls: type[errors.ServingError], status: HTTPStatus) -> None:
    exc = cls("what to fix")
    assert exc.status == status
    assert exc.message == str(exc) == "what to fix"


def test_lookup_errors_carry_what_a_door_words_them_from() -> None:
    missing = errors.ModelNotFound("m", 3, whole_model=False)
    assert (missing.status, missing.model_name, missing.version) == (404, "m", 3)
    assert not missing.whole_model
    assert missing.message == "model 'm' has no version 3"
    assert errors.ModelNotFound("m").message == "model 'm' is not served"
    label = errors.UnknownLabel("m", "canary")
    assert (label.status, label.model_name, label.label) == (400, "m", "canary")


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


def test_an_excerpt_keeps_short_text_and_cuts_long_text_saying_so() -> None:
    assert errors.excerpt("age") == "age"
    cut = errors.excerpt("x" * 5_000_000)
    rest = 5_000_000 - errors.EXCERPT_CHARS
    assert cut == "x" * errors.EXCERPT_CHARS + f"...({rest} more characters)"


def test_a_bounded_message_keeps_its_start_and_its_end() -> None:
    message = "text/csv: " + "v" * 100_000 + " send numbers"
    bounded = errors.bounded(message)
    assert len(bounded) < errors.MESSAGE_CHARS + 60
    assert bounded.startswith("text/csv: vvv")
    assert bounded.endswith("send numbers")
    assert "characters cut" in bounded
    assert errors.bounded("short") == "short"


def test_every_client_message_is_bounded_by_the_failure_mapping() -> None:
    from smserve.failures import describe

    failure = describe(errors.InvalidInput("x" * 5_000_000), "POST /invocations")
    assert failure.status == 400
    assert len(failure.message) < errors.MESSAGE_CHARS + 60
