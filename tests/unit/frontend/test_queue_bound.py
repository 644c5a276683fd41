"""The queue bound's setting and the nginx lines it renders (tests/process/test_queue_bound.py
drives a running proxy)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smserve.config import DEFAULT_MAX_QUEUED, Settings
from smserve.errors import ConfigError
from smserve.frontend.nginx import ProxyLayout, find_nginx, render, write_config
from smserve.frontend.queue_bound import queue_limit


@pytest.mark.parametrize(
    ("env", "queued"),
    [
        ({}, DEFAULT_MAX_QUEUED),
        ({"SAGEMAKER_BIND_TO_PORT": "8080"}, 0),  # on SageMaker the platform retries
        ({"SAGEMAKER_BATCH": "true"}, 0),
        ({"SAGEMAKER_BATCH": "false"}, DEFAULT_MAX_QUEUED),
        ({"SAGEMAKER_BIND_TO_PORT": "8080", "SMSERVE_MAX_QUEUED_REQUESTS": "7"}, 7),
        ({"SMSERVE_MAX_QUEUED_REQUESTS": "0"}, 0),
    ],
)
def test_the_queue_bound_setting(env: dict[str, str], queued: int) -> None:
    assert Settings.from_env(env).max_queued_requests == queued


def test_a_negative_queue_bound_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SMSERVE_MAX_QUEUED_REQUESTS"):
        Settings.from_env({"SMSERVE_MAX_QUEUED_REQUESTS": "-1"})


def test_the_limit_is_one_post_per_thread_plus_the_bound(tmp_path: Path) -> None:
    settings = Settings(workers=2, threads=3, max_queued_requests=10)
    assert queue_limit(settings) == 16
    text = render(settings, ProxyLayout(tmp_path), as_root=False)
    assert "limit_conn smserve_queue 16;" in text
    assert "limit_conn_status 503;" in text
    assert "map $request_method $smserve_queue_key { POST queue; default ''; }" in text
    page_503 = next(line for line in text.splitlines() if "/_smserve/error/503 " in line)
    assert "add_header Retry-After 1 always;" in page_503


def test_no_bound_renders_no_limit(tmp_path: Path) -> None:
    text = render(Settings(max_queued_requests=0), ProxyLayout(tmp_path), as_root=False)
    assert "limit_conn" not in text
    assert "smserve_queue" not in text


def test_nginx_accepts_the_bounded_config(tmp_path: Path) -> None:
    settings = Settings(port=18080, runtime_dir=tmp_path, max_queued_requests=4)
    nginx = find_nginx(settings)
    if nginx is None:
        pytest.fail("nginx is not installed: ./run-tests installs it (apt-get install nginx-light)")
    config = write_config(settings, ProxyLayout(tmp_path))
    checked = subprocess.run(
        [nginx, "-t", "-c", str(config), "-e", "stderr"], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr
