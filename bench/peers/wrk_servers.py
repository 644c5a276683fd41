"""The servers ``http_wrk.py`` measures beside smserve, each started on loopback and stopped by
its own handle: the nginx fixed-body floor and the AWS built-in XGBoost container's serving
code (see ``http_wrk.py`` for what each stands for)."""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.shared import harness, proxied


@contextlib.contextmanager
def floor_server(run_dir: Path) -> Iterator[int]:
    run_dir.mkdir()
    port = harness.free_port()
    sock = run_dir / "floor.sock"
    conf = run_dir / "nginx.conf"
    user = "user root;" if os.geteuid() == 0 else ""  # its workers reach the socket in scratch
    conf.write_text(user + FLOOR_CONF.format(run=run_dir, port=port, sock=sock))
    command = ["nginx", "-c", str(conf), "-p", str(run_dir)]
    with process(command, {}, run_dir / "nginx.log") as started:
        wait_port(port, started)
        yield port


FLOOR_CONF = """daemon off; worker_processes 1; pid {run}/nginx.pid; error_log stderr warn;
events {{ worker_connections 1024; multi_accept on; }}
http {{
    access_log off; tcp_nodelay on; client_body_temp_path {run};
    proxy_temp_path {run}; fastcgi_temp_path {run}; uwsgi_temp_path {run}; scgi_temp_path {run};
    upstream fixed {{ server unix:{sock}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://fixed; proxy_http_version 1.1; proxy_set_header Connection "";
            proxy_request_buffering on; proxy_buffering on;
        }}
    }}
    server {{
        listen unix:{sock};
        location / {{ default_type text/csv; return 200 "0.5\\n"; }}
    }}
}}
"""


@contextlib.contextmanager
def aws_server(args: argparse.Namespace, model_dir: Path, run_dir: Path) -> Iterator[int]:
    """The AWS algorithm-mode app under gunicorn as its ScoringService.start configures it."""
    run_dir.mkdir()
    (run_dir / "aws_app.py").write_text(
        "from sagemaker_xgboost_container.algorithm_mode import serve\n"
        "app = serve.ScoringService.csdk_start()\n"
        "post_worker_init = serve.ScoringService.post_worker_init\n"
    )
    port = harness.free_port()
    python = args.aws_python or sys.executable
    command = [
        python,
        "-m",
        "gunicorn",
        "-k",
        "gevent",
        "-w",
        str(args.workers),
        "--keep-alive",
        "60",
        "-b",
        f"127.0.0.1:{port}",
        "--chdir",
        str(run_dir),
        "-c",
        "python:aws_app",
        "--log-level",
        "warning",
        "aws_app:app",
    ]
    env = {
        "PYTHONPATH": f"{args.aws_src}:{run_dir}",
        "SM_MODEL_DIR": str(model_dir),
        "OMP_NUM_THREADS": "1",
        "SAGEMAKER_BIND_TO_PORT": str(port),
    }
    with process(command, env, run_dir / "aws.log") as started:  # it logs every request
        wait_port(port, started)
        yield port


@contextlib.contextmanager
def process(
    command: list[str], env: dict[str, str], log: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with (log or Path(os.devnull)).open("wb") as sink:
        child = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=sink, stderr=sink, start_new_session=True
        )
    try:
        yield child
    finally:
        proxied.stop(child)


def wait_port(port: int, child: subprocess.Popen[bytes]) -> None:
    harness.wait_ready(port, child, "/ping", 120)
