"""``http.fastpath`` answers exactly as Flask does: each request goes through the app (fast
path in front) and through the same app's Flask callable, and status, headers, body, log
records and metrics counts must match."""

from __future__ import annotations

import io
import logging
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder, run_wsgi_app

from smserve.config import Settings
from smserve.errors import PredictionError
from smserve.http import context, fastpath
from smserve.http.app import create_app
from smserve.repository import runtime
from smserve.types import Batch, Prediction
from tests.fakes import EchoAlgorithm, FailingAlgorithm, fake_service

ROWS = b"1,2\n3,4\n"
V2_ROWS = b'{"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}]}'
Answer = tuple[str, list[tuple[str, str]], bytes]


class _Refusing(EchoAlgorithm):
    def predict(self, batch: Batch) -> Prediction:
        raise PredictionError("the booster returned no scores")


class _BrokenStream(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise ConnectionResetError("peer went away")


def _call(wsgi: Callable[..., Any], environ: dict[str, Any]) -> Answer:
    iterable, status, headers = run_wsgi_app(wsgi, environ, buffered=True)
    return status, list(headers.items()), b"".join(iterable)


def _environ(kwargs: dict[str, Any]) -> dict[str, Any]:
    overrides = kwargs.pop("environ_overrides", dict)
    environ: dict[str, Any] = EnvironBuilder(**kwargs).get_environ()
    environ.update(overrides())  # fresh streams for each call
    return environ


def _both(app: Flask, **kwargs: Any) -> tuple[Answer, Answer]:
    wrapper = app.wsgi_app
    assert isinstance(wrapper, fastpath.FastPath)
    fast = _call(app, _environ(dict(kwargs)))
    flask = _call(wrapper.flask, _environ(dict(kwargs)))
    return fast, flask


def _logged(caplog: pytest.LogCaptureFixture, call: Callable[[], object]) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="smserve"):
        call()
    # this thread's records only: a fast predictor still being built for an earlier test's
    # model logs from its own thread whenever it finishes
    mine = [record for record in caplog.records if record.thread == threading.get_ident()]
    return [re.sub(r"0x[0-9a-f]+", "", record.getMessage()) for record in mine]


def _counts(app: Flask) -> list[str]:
    text = app.test_client().get("/monitoring/prometheus/metrics").get_data(as_text=True)
    return [line for line in text.splitlines() if "request_count{" in line or "_count{" in line]


REQUESTS: list[dict[str, Any]] = [
    {"method": "POST", "path": "/invocations", "data": ROWS, "content_type": "text/csv"},
    {"method": "POST", "path": "/invocations", "data": ROWS, "headers": {"Accept": "text/csv"}},
    {"method": "POST", "path": "/invocations", "data": b"", "content_type": "text/csv"},
    {"method": "POST", "path": "/invocations", "data": ROWS, "content_type": "image/png"},
    {"method": "POST", "path": "/invocations", "data": ROWS, "headers": {"Accept": "image/png"}},
    {"method": "POST", "path": "/invocations", "data": b"1,x", "content_type": "text/csv"},
    {"method": "POST", "path": "/invocations", "data": b"1," * 20, "content_type": "text/csv"},
    {"method": "POST", "path": "/invocations?x=1", "data": ROWS, "content_type": "text/csv"},
    *(
        {
            "method": "POST",
            "path": "/invocations",
            "data": ROWS,
            "content_type": "text/csv",
            "headers": {"X-Amzn-SageMaker-Custom-Attributes": attributes},
        }
        for attributes in ("trace=1", "outputs=score", "outputs=")
    ),
    {
        "method": "POST",
        "path": "/invocations",
        "headers": {"Content-Type": "text/csv", "Content-Length": "100"},
        "environ_overrides": lambda: {"wsgi.input": _BrokenStream(), "wsgi.input_terminated": True},
    },
    {
        "method": "POST",
        "path": "/invocations",
        "headers": {"Content-Type": "text/csv", "Content-Length": "100"},
        "environ_overrides": lambda: {"wsgi.input": io.BytesIO(ROWS)},
    },
    {
        "method": "POST",
        "path": "/invocations",
        "headers": {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"},
        "environ_overrides": lambda: {
            "wsgi.input": io.BytesIO(ROWS),
            "wsgi.input_terminated": True,
        },
    },
    {
        "method": "POST",
        "path": "/invocations",
        "data": ROWS,
        "headers": {"X-Amzn-SageMaker-Target-Model": "m"},
    },
    *(
        {"method": "POST", "path": path, "data": data, "content_type": "application/json"}
        for path, data in (
            ("/v2/models/model/infer", V2_ROWS),
            ("/v2/models/model/versions/1/infer", V2_ROWS),
            ("/v2/models/model/versions/7/infer", V2_ROWS),
            ("/v2/models/nope/infer", V2_ROWS),
            ("/v2/models/model/infer", b'{"inputs": [{"name": "x"}]}'),
            ("/v2/models/model/infer", b"not json"),
            ("/v2/models/model/infer", V2_ROWS * 3),
        )
    ),
    {
        "method": "POST",
        "path": "/v2/models/model/infer",
        "headers": {"Content-Type": "application/json", "Content-Length": "100"},
        "environ_overrides": lambda: {"wsgi.input": _BrokenStream(), "wsgi.input_terminated": True},
    },
    {"method": "GET", "path": "/ping"},
    {"method": "HEAD", "path": "/ping"},
    {"method": "GET", "path": "/invocations"},
    {"method": "POST", "path": "/ping"},
]


@pytest.fixture(params=["echo", "failing", "refusing", "not-ready"])
def app(request: pytest.FixtureRequest) -> Flask:
    settings = Settings(max_payload_bytes=16)
    algorithm = {"failing": FailingAlgorithm, "refusing": _Refusing}.get(
        request.param, EchoAlgorithm
    )
    app = create_app(settings, fake_service(algorithm(), settings))
    if request.param == "not-ready":
        context.install(app, settings, None)
    return app


@pytest.mark.parametrize(
    "kwargs",
    REQUESTS,
    ids=lambda k: f"{k['method']} {k['path']} {k.get('data', k.get('headers'))!r}"[:60],
)
def test_answers_match_flask(app: Flask, kwargs: dict[str, Any]) -> None:
    fast, flask = _both(app, **kwargs)
    assert fast == flask


@pytest.mark.parametrize("kwargs", REQUESTS[:9], ids=lambda k: k["path"])
def test_logs_match_flask(
    app: Flask, kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    wrapper = app.wsgi_app
    assert isinstance(wrapper, fastpath.FastPath)
    fast = _logged(caplog, lambda: _call(app, _environ(dict(kwargs))))
    flask = _logged(caplog, lambda: _call(wrapper.flask, _environ(dict(kwargs))))
    assert fast == flask


def test_metrics_count_alike() -> None:
    fast = create_app(Settings(max_payload_bytes=16), fake_service(EchoAlgorithm()))
    slow = create_app(Settings(max_payload_bytes=16), fake_service(EchoAlgorithm()))
    wrapper = slow.wsgi_app
    assert isinstance(wrapper, fastpath.FastPath)
    for kwargs in REQUESTS[:8]:
        _call(fast, _environ(dict(kwargs)))
        _call(wrapper.flask, _environ(dict(kwargs)))
    assert _counts(fast) == _counts(slow)
    assert any('status="OK"' in line for line in _counts(fast))


def test_multi_model_endpoint_answers_match(tmp_path: Path, kmeans_model_dir: Path) -> None:
    shutil.copytree(kmeans_model_dir, tmp_path / "models" / "alpha" / "model")
    settings = runtime.prepare(
        Settings(multi_model=True, models_dir=tmp_path / "models", runtime_dir=tmp_path / "run")
    )
    app = create_app(settings)
    client = app.test_client()
    assert (
        client.post("/models", json={"model_name": "alpha", "url": "alpha/model"}).status_code
        == 200
    )
    row = b"0,0,0,0\n"
    for headers in (
        {},
        {"X-Amzn-SageMaker-Target-Model": "alpha"},
        {"X-Amzn-SageMaker-Target-Model": "nope"},
    ):
        fast, flask = _both(
            app,
            method="POST",
            path="/invocations",
            data=row,
            headers={"Content-Type": "text/csv", **headers},
        )
        assert fast == flask


V2_REQUESTS = [kwargs for kwargs in REQUESTS if str(kwargs["path"]).startswith("/v2/")]


@pytest.fixture(params=["echo", "failing", "not-ready"])
def v2_app(request: pytest.FixtureRequest) -> Flask:
    """Bodies up to 1 KiB, so V2 infer requests take the fast path."""
    settings = Settings(max_payload_bytes=1024)
    algorithm = FailingAlgorithm() if request.param == "failing" else EchoAlgorithm()
    app = create_app(settings, fake_service(algorithm, settings))
    if request.param == "not-ready":
        context.install(app, settings, None)
    return app


@pytest.mark.parametrize("kwargs", V2_REQUESTS, ids=lambda k: f"{k['path']} {k.get('data')!r}"[:60])
def test_v2_infer_answers_match_flask(v2_app: Flask, kwargs: dict[str, Any]) -> None:
    wrapper = v2_app.wsgi_app
    assert isinstance(wrapper, fastpath.FastPath)
    assert wrapper._target("POST", kwargs["path"]) is not None  # the fast path answers it
    fast, flask = _both(v2_app, **kwargs)
    assert fast == flask


def test_v2_infer_is_answered_and_counted_alike() -> None:
    apps = [
        create_app(Settings(max_payload_bytes=1024), fake_service(EchoAlgorithm())) for _ in "ab"
    ]
    flask = apps[1].wsgi_app
    assert isinstance(flask, fastpath.FastPath)
    for kwargs in V2_REQUESTS[:5]:
        _call(apps[0], _environ(dict(kwargs)))
        _call(flask.flask, _environ(dict(kwargs)))
    status, _, body = _call(apps[0], _environ(dict(V2_REQUESTS[0])))
    _call(flask.flask, _environ(dict(V2_REQUESTS[0])))
    assert status == "200 OK"
    assert b'"outputs"' in body
    assert _counts(apps[0]) == _counts(apps[1])
    assert any('status="OK"} 3' in line for line in _counts(apps[0]))
