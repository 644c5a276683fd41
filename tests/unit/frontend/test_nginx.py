"""The rendered nginx.conf: real nginx validates it, and every page nginx answers itself is
our JSON envelope. (tests/process/test_frontend.py drives the running proxy.)"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from smserve import frontend
from smserve.config import Settings
from smserve.errors import ConfigError, PayloadTooLarge
from smserve.frontend.nginx import ProxyLayout, error_pages, find_nginx, render, write_config


def nginx_or_fail() -> str:
    found = find_nginx()
    if found is None:
        pytest.fail("nginx is not installed: ./run-tests installs it (apt-get install nginx-light)")
    return found


def test_nginx_accepts_the_rendered_config(tmp_path: Path) -> None:
    settings = Settings(port=18080, runtime_dir=tmp_path, max_payload_bytes=3 * 1048576)
    config = write_config(settings, ProxyLayout(tmp_path))
    checked = subprocess.run(
        [nginx_or_fail(), "-t", "-c", str(config), "-e", "stderr"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr


def test_limits_and_timeouts_come_from_settings(tmp_path: Path) -> None:
    settings = Settings(
        port=9000,
        max_payload_bytes=2 * 1048576,
        client_header_timeout_s=3,
        client_body_timeout_s=4,
        keep_alive_s=7,
        timeout_s=33,
    )
    text = render(settings, ProxyLayout(tmp_path), as_root=False)
    for line in (
        "listen 0.0.0.0:9000 backlog=4096;",
        "client_max_body_size 2097152;",
        "client_body_buffer_size 2097152;",  # ordinary bodies never touch the disk
        "client_header_timeout 3s;",
        "client_body_timeout 4s;",
        "keepalive_timeout 7s;",
        "proxy_read_timeout 33s;",
        "proxy_request_buffering on;",
        f"server unix:{tmp_path / 'gunicorn.sock'} max_fails=0;",
    ):
        assert line in text
    assert "user " not in text  # only root can switch users


def test_as_root_the_workers_drop_to_nobody(tmp_path: Path) -> None:
    assert "user nobody nogroup;" in render(Settings(), ProxyLayout(tmp_path), as_root=True)


def test_every_error_page_is_the_json_envelope(tmp_path: Path) -> None:
    settings = Settings(max_payload_bytes=1048576)
    text = render(settings, ProxyLayout(tmp_path), as_root=False)
    pages = dict(re.findall(r"location = /_smserve/error/(\d+) \{.*?return \d+ '(.*?)'; \}", text))
    assert set(pages) == {str(code) for code in error_pages(settings)}
    for code, body in pages.items():
        envelope = json.loads(body)
        assert set(envelope) == {"error", "message"}, code
        assert envelope["error"] == envelope["message"] != ""
    assert json.loads(pages["413"])["error"] == PayloadTooLarge.over(1048576).message
    assert "error_page 494 =431 /_smserve/error/494;" in text


def test_stalled_header_and_body_limits_are_named_in_the_408(tmp_path: Path) -> None:
    settings = Settings(client_header_timeout_s=5, client_body_timeout_s=6)
    _, message = error_pages(settings)[408]
    assert "within 5 s (SMSERVE_CLIENT_HEADER_TIMEOUT_S)" in message
    assert "more than 6 s (SMSERVE_CLIENT_BODY_TIMEOUT_S)" in message


def test_choose_uses_nginx_when_installed_and_warns_when_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert frontend.choose(Settings(), "/usr/sbin/nginx") == frontend.NGINX
    assert caplog.records == []
    assert frontend.choose(Settings(), None) == frontend.GUNICORN
    assert "slow or stalled clients" in caplog.text


def test_a_forced_mode_wins() -> None:
    assert frontend.choose(Settings(frontend="gunicorn"), "/usr/sbin/nginx") == frontend.GUNICORN
    assert frontend.choose(Settings(frontend="nginx"), "/usr/sbin/nginx") == frontend.NGINX
    with pytest.raises(ConfigError, match="SMSERVE_FRONTEND=nginx"):
        frontend.choose(Settings(frontend="nginx"), None)


def test_an_unknown_frontend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SMSERVE_FRONTEND"):
        Settings.from_env({"SMSERVE_FRONTEND": "apache"})


def test_tf_serving_and_v2_paths_get_their_own_envelope(tmp_path: Path) -> None:
    settings = Settings(max_payload_bytes=1048576)
    text = render(settings, ProxyLayout(tmp_path), as_root=False)
    plain = dict(
        re.findall(r"location = /_smserve/error/plain/(\d+) \{.*?return \d+ '(.*?)'; \}", text)
    )
    assert set(plain) == {str(code) for code in error_pages(settings)}
    assert all(set(json.loads(body)) == {"error"} for body in plain.values())
    for match in ("~* ^/v1/", "/v2"):
        location = text.split(f"location {match} {{", 1)[1].split("}", 1)[0]
        assert "error_page 413 =413 /_smserve/error/plain/413;" in location
        assert "proxy_pass http://smserve_gunicorn;" in location
