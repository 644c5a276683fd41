"""The metrics page as SageMaker's scraper sees it: a real Prometheus server (Debian's
``prometheus``, which ./run-tests installs) scrapes the real server through nginx every
second, and PromQL through its HTTP API returns the counts of a known set of requests and a
latency quantile. With gunicorn alone the page is served by the workers."""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.servers import Server, free_port, running_server

pytestmark = pytest.mark.process

ROW = b"0.5,-1.0,0.25,2.0\n"
V2 = b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}'
SCRAPE_CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: smserve
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:{port}"]
"""


def env_for(model_dir: Path, frontend: str) -> dict[str, str]:
    return {
        "SM_MODEL_DIR": str(model_dir),
        "SMSERVE_FRONTEND": frontend,
        "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
    }


@contextlib.contextmanager
def prometheus(tmp_path: Path, target_port: int) -> Iterator[str]:
    """A Prometheus scraping ``target_port`` every second; yields its base URL."""
    executable = shutil.which("prometheus")
    if executable is None:
        pytest.fail("prometheus is not installed: ./run-tests installs it (apt-get)")
    config = tmp_path / "prometheus.yml"
    config.write_text(SCRAPE_CONFIG.replace("{port}", str(target_port)))
    port = free_port()
    command = [
        executable,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: fetch(f"{url}/-/ready")[0] == 200, 60, process)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


def wait_for(check: object, timeout_s: float, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process is None or process.poll() is None, "prometheus exited"
        if callable(check) and check():
            return
        time.sleep(0.25)
    raise AssertionError(f"not true within {timeout_s} s")


def query(url: str, promql: str) -> dict[str, float]:
    """Instant query: {labels as JSON: value} for each series."""
    status, body = fetch(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
    assert status == 200, body
    data = json.loads(body)["data"]
    if data["resultType"] == "scalar":
        return {"": float(data["result"][1])}
    return {
        json.dumps(series["metric"], sort_keys=True): float(series["value"][1])
        for series in data["result"]
    }


def post(server: Server, path: str, body: bytes, content_type: str) -> int:
    connection = server.connection()
    connection.request("POST", path, body=body, headers={"Content-Type": content_type})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status


@pytest.fixture(scope="module")
def proxied(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("logs"), env_for(xgb_model_dir, "nginx")) as s:
        yield s


def test_prometheus_counts_the_requests_and_their_latency(proxied: Server, tmp_path: Path) -> None:
    with prometheus(tmp_path, proxied.port) as url:
        statuses = [post(proxied, "/invocations", ROW, "text/csv") for _ in range(25)]
        statuses += [post(proxied, "/invocations", ROW, "image/png") for _ in range(3)]
        statuses += [post(proxied, "/v2/models/model/infer", V2, "application/json")]
        assert statuses == [200] * 25 + [415] * 3 + [200]
        total = 'sum(smserve_requests_total{door="sagemaker"})'
        wait_for(lambda: query(url, total).get("{}") == 28, 30, None)

        by_status = query(url, 'sum by (status) (smserve_requests_total{door="sagemaker"})')
        assert by_status == {'{"status": "200"}': 25, '{"status": "415"}': 3}
        by_format = query(url, 'sum by (format) (smserve_requests_total{door="sagemaker"})')
        assert by_format == {'{"format": "text/csv"}': 25, '{"format": "other"}': 3}
        assert query(url, 'sum(smserve_requests_total{door="v2",model="model"})') == {"{}": 1}
        quantile = query(
            url,
            "histogram_quantile(0.5, sum by (le) "
            '(smserve_request_duration_seconds_bucket{door="sagemaker"}))',
        )["{}"]
        assert math.isfinite(quantile)
        assert 0 < quantile < 1.0
        count = 'sum(smserve_request_duration_seconds_count{door="sagemaker"})'
        assert query(url, count) == {"{}": 25}  # successes only
        predict = 'sum(smserve_inference_stage_duration_seconds_count{stage="predict"})'
        assert query(url, predict) == {"{}": 25}
        assert query(url, 'up{job="smserve"}') == {
            f'{{"__name__": "up", "instance": "127.0.0.1:{proxied.port}", "job": "smserve"}}': 1
        }
        workers = query(url, 'smserve_processes{process="worker"}')
        assert list(workers.values()) == [2]
        memory = query(url, "sum(smserve_process_resident_memory_bytes)")["{}"]
        assert memory > 50 * 2**20  # two workers with xgboost, nginx and the supervisor
        assert query(url, "sum(smserve_model_loads_total)") == {"{}": 2}  # one per worker
        assert query(url, "smserve_models_loaded")
        assert query(url, "sum(smserve_requests_in_flight)") == {"{}": 0}


def test_tf_serving_names_stay_at_their_path(proxied: Server) -> None:
    connection = proxied.connection()
    connection.request("GET", "/monitoring/prometheus/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    assert "# TYPE :tensorflow:serving:request_count counter" in text
    assert "smserve_" not in text


def test_with_gunicorn_alone_the_workers_serve_the_page(
    xgb_model_dir: Path, tmp_path: Path
) -> None:
    with running_server(tmp_path, env_for(xgb_model_dir, "gunicorn")) as server:
        assert post(server, "/invocations", ROW, "text/csv") == 200
        connection = server.connection()
        deadline = time.monotonic() + 10
        text = ""
        while 'status="200"} 1' not in text and time.monotonic() < deadline:
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            text = response.read().decode()
            assert response.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
            time.sleep(0.2)  # the other worker's file is at most a second old
        connection.close()
    labels = 'door="sagemaker",model="model",format="text/csv",status="200"'
    assert f"smserve_requests_total{{{labels}}} 1" in text
    assert 'smserve_processes{process="worker"} 2' in text
