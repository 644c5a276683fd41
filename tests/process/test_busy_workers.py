"""While every worker is inside a long request, the real front end (nginx, the supervisor,
gunicorn with two one-thread workers) still answers /ping and the metrics page: they never
queue behind inference. The model is a fake that sleeps (tests.fakes.SlowAlgorithm), so the
requests are long on any machine; everything else is the production stack. At debug level
(SageMaker's numeric SAGEMAKER_CONTAINER_LOG_LEVEL), the real ``smserve serve`` logs one line
per request with the caller's inference id."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
DELAY_S = 8.0
MAX_LONG_REQUESTS = 8
SLOW_SERVER = (
    "import sys\n"
    f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"  # another package may be named tests
    "from smserve.config import Settings\n"
    "from smserve.http.app import create_app\n"
    "from smserve.http.server import run\n"
    "from smserve.repository import runtime\n"
    "from fakes import SlowAlgorithm, fake_service\n"
    "settings = runtime.prepare(Settings.from_env())\n"
    f"algorithm = SlowAlgorithm({DELAY_S})\n"
    "sys.exit(run(settings, lambda: create_app(settings, fake_service(algorithm, settings))))\n"
)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "SMSERVE_FRONTEND": "nginx",
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        "SMSERVE_METRICS_PATH": "/ops/metrics",
    }
    command = [sys.executable, "-c", SLOW_SERVER]
    with running_server(tmp_path_factory.mktemp("logs"), env, command) as server:
        yield server


def invoke(server: Server, results: list[int], inference_id: str, body: bytes = b"1,2\n") -> None:
    """POST one request; its status (or -1 if it failed) goes to ``results``."""
    connection = server.connection(timeout_s=60)
    headers = {"Content-Type": "text/csv", "X-Amzn-SageMaker-Inference-Id": inference_id}
    try:
        connection.request("POST", "/invocations", body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        results.append(response.status)
    except OSError:
        results.append(-1)
    finally:
        connection.close()


def get(server: Server, path: str) -> tuple[int, bytes, float]:
    started = time.monotonic()
    connection = server.connection(timeout_s=DELAY_S / 3)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body, time.monotonic() - started


def in_flight(server: Server) -> int:
    status, body, _ = get(server, "/ops/metrics")
    assert status == 200
    found = re.search(rb"^smserve_requests_in_flight (\d+)$", body, re.MULTILINE)
    assert found is not None
    return int(found.group(1))


def test_ping_and_metrics_answer_while_every_worker_is_busy(slow: Server) -> None:
    # A busy gthread worker still accepts connections (and queues their requests), so one
    # long request each is not guaranteed: send them until both workers are inside one.
    results: list[int] = []
    busy: list[threading.Thread] = []
    while in_flight(slow) < 2:
        assert len(busy) < MAX_LONG_REQUESTS
        busy.append(threading.Thread(target=invoke, args=(slow, results, f"busy-{len(busy)}")))
        busy[-1].start()
        time.sleep(1.5)  # the counts reach the page within a second
    for _ in range(10):  # each answer comes at once (a worker frees up DELAY_S later)
        status, _, _ = get(slow, "/ping")  # times out after DELAY_S / 3
        assert status == 200
        time.sleep(0.05)
    assert in_flight(slow) == 2  # both still busy (the page lags by a second at most)
    for thread in busy:
        thread.join()
    assert results == [200] * len(busy)


def test_at_debug_each_request_is_one_line_with_its_inference_id(
    xgb_model_dir: Path, tmp_path: Path
) -> None:
    env = {"SM_MODEL_DIR": str(xgb_model_dir), "SAGEMAKER_CONTAINER_LOG_LEVEL": "10"}
    with running_server(tmp_path, env) as server:
        results: list[int] = []
        invoke(server, results, "id-7f3a", b"0.5,-1.0,0.25,2.0\n")
        assert results == [200]
        pattern = r"POST /invocations 200 [\d.]+ ms model=model inference_id=id-7f3a"
        deadline = time.monotonic() + 5
        while not re.search(pattern, server.output()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(re.findall(pattern, server.output())) == 1
