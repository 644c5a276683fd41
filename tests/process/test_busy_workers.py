"""While every worker is inside a long request, the real front end (nginx, the supervisor,
gunicorn with two one-thread workers) still answers /ping and the metrics page: they never
queue behind inference. The model is a fake that sleeps (tests.fakes.SlowAlgorithm), so the
requests are long on any machine; everything else is the production stack. At debug level
(SageMaker's numeric SAGEMAKER_CONTAINER_LOG_LEVEL), each request is one log line."""

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
DELAY_S = 6.0
SLOW_SERVER = (
    "import sys\n"
    "from smserve.config import Settings\n"
    "from smserve.http.app import create_app\n"
    "from smserve.http.server import run\n"
    "from smserve.repository import runtime\n"
    "from tests.fakes import SlowAlgorithm, fake_service\n"
    "settings = runtime.prepare(Settings.from_env())\n"
    f"algorithm = SlowAlgorithm({DELAY_S})\n"
    "sys.exit(run(settings, lambda: create_app(settings, fake_service(algorithm, settings))))\n"
)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "PYTHONPATH": str(ROOT),
        "SMSERVE_FRONTEND": "nginx",
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        "SMSERVE_METRICS_PATH": "/ops/metrics",
        "SAGEMAKER_CONTAINER_LOG_LEVEL": "10",
    }
    command = [sys.executable, "-c", SLOW_SERVER]
    with running_server(tmp_path_factory.mktemp("logs"), env, command) as server:
        yield server


def invoke(server: Server, results: list[int], inference_id: str) -> None:
    connection = server.connection(timeout_s=DELAY_S * 4)
    headers = {"Content-Type": "text/csv", "X-Amzn-SageMaker-Inference-Id": inference_id}
    connection.request("POST", "/invocations", body=b"1,2\n", headers=headers)
    response = connection.getresponse()
    response.read()
    results.append(response.status)
    connection.close()


def get(server: Server, path: str) -> tuple[int, bytes, float]:
    started = time.monotonic()
    connection = server.connection(timeout_s=DELAY_S / 3)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body, time.monotonic() - started


def test_ping_and_metrics_answer_while_every_worker_is_busy(slow: Server) -> None:
    results: list[int] = []
    busy = [threading.Thread(target=invoke, args=(slow, results, f"busy-{n}")) for n in range(2)]
    for thread in busy:
        thread.start()
    time.sleep(1.0)  # both requests are now inside predict, one per worker
    in_flight = None
    for _ in range(10):  # each answer must come well before a worker is free
        status, _, _ = get(slow, "/ping")
        assert status == 200
        status, body, _ = get(slow, "/ops/metrics")
        assert status == 200
        in_flight = re.search(rb"^smserve_requests_in_flight (\d+)$", body, re.MULTILINE)
        time.sleep(0.2)
    assert in_flight is not None
    assert int(in_flight.group(1)) == 2
    assert results == []  # the long requests were still running all along
    for thread in busy:
        thread.join()
    assert results == [200, 200]


def test_at_debug_each_request_is_one_line_with_its_inference_id(slow: Server) -> None:
    results: list[int] = []
    invoke(slow, results, "id-7f3a")
    deadline = time.monotonic() + 5
    pattern = r"POST /invocations 200 [\d.]+ ms model=model inference_id=id-7f3a"
    while not re.search(pattern, slow.output()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(re.findall(pattern, slow.output())) == 1
