"""schemathesis against the real server (nginx in front of gunicorn workers), over every
operation of the document it serves at /openapi.json, with every check on but the two
``schemathesis.toml`` turns off (and says why): no 5xx, every status, content type, header
and body as documented, undeclared methods answered 405 with Allow, schema-violating
requests rejected. A single-model server, then a multi-model one (its SageMaker routes,
/models included).

Bounded: a fixed seed, at most ``EXAMPLES`` examples per operation, and a time budget per
server (schemathesis spends it, fuzzing and stateful phases repeat until it is used)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ST = Path(sys.executable).with_name("st")
CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = 10
SEED = 20261202
DOCUMENT = "/openapi.json"
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# the budget below plus schemathesis' start and its last requests, on a busy machine too
RUN_TIMEOUT_S = 600


def schemathesis(server: Server, budget_s: int, workdir: Path, *only: str) -> str:
    """Run ``st run`` against ``server`` (``only``: these tags); its report, asserted free of
    failures and errors."""
    command = [
        *(str(ST), "--config-file", str(CONFIG), "--no-color", "run"),
        f"http://127.0.0.1:{server.port}{DOCUMENT}",
        *("--max-examples", str(EXAMPLES), "--max-time", str(budget_s), "--seed", str(SEED)),
        *(option for tag in only for option in ("--include-tag", tag)),
    ]
    # its crash cache (.schemathesis/) goes to ``workdir``, not the repository
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=workdir
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    return report


def documented_paths(server: Server) -> dict[str, dict[str, Any]]:
    connection = server.connection()
    try:
        connection.request("GET", DOCUMENT)
        paths: dict[str, dict[str, Any]] = json.loads(connection.getresponse().read())["paths"]
        return paths
    finally:
        connection.close()


def assert_every_operation_tested(
    report: str, paths: dict[str, dict[str, Any]], *only: str
) -> None:
    """Every operation (of tags ``only``, if given) was tested: none left for lack of time."""
    # schemathesis leaves out the operation it loaded the document from (GET /openapi.json)
    count = sum(
        1
        for path, item in paths.items()
        for method, operation in item.items()
        if method in METHODS and path != DOCUMENT
        if not only or set(operation["tags"]) & set(only)
    )
    assert re.search(rf"Selected: {count}/\d+\s+Tested: {count}\b", report), report
    assert "failure" not in report.split("SUMMARY")[-1].lower(), report


def test_every_operation_of_a_single_model_server(xgb_model_dir: Path, tmp_path: Path) -> None:
    env = {"SM_MODEL_DIR": str(xgb_model_dir), "SMSERVE_FRONTEND": "nginx"}
    with running_server(tmp_path, {**env, "SAGEMAKER_MODEL_SERVER_WORKERS": "2"}) as server:
        report = schemathesis(server, 30, tmp_path)
        paths = documented_paths(server)
        assert_every_operation_tested(report, paths)
        assert {
            "/invocations",
            "/v1/models/{model}:predict",
            "/v2/models/{model_name}/infer",
        } <= set(paths)


def test_every_operation_of_a_multi_model_server(xgb_model_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(xgb_model_dir, models / "model")
    env = {
        "SAGEMAKER_MULTI_MODEL": "true",
        "SMSERVE_MODELS_DIR": str(models),
        "SMSERVE_FRONTEND": "nginx",
    }
    with running_server(tmp_path, env) as server:
        load = json.dumps({"model_name": "model", "url": "model"})
        connection = server.connection()
        connection.request("POST", "/models", body=load)
        assert connection.getresponse().status == 200
        connection.close()
        # the SageMaker door's routes: what a multi-model server answers differently (the
        # /v1/ and /v2 doors read the same repository interface, fuzzed on the server above)
        report = schemathesis(server, 15, tmp_path, "sagemaker")
        paths = documented_paths(server)
        assert_every_operation_tested(report, paths, "sagemaker")
        assert {"/models", "/models/{name}", "/models/{name}/invoke"} <= set(paths)
