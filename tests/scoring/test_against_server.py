"""The same files through ``smserve score`` and through a running ``smserve serve`` with
SAGEMAKER_BATCH=true give byte-identical answers, for every content type and Accept.

Mini-batches of 2 KB cut each file into several requests, so assembly is tested too; the
server gets each file whole, in one request, so the test does not reuse our splitter."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.process.servers import Server, run_cli, running_server, server_env
from tests.scoring.conftest import outputs, write_inputs

pytestmark = pytest.mark.process

ACCEPTS = [
    "text/csv",
    "application/json",
    "application/jsonlines",
    "application/x-recordio-protobuf",
]
# application/json is one document per file (SplitType None), as Batch Transform recommends.
INPUTS = [
    ("text/csv", "Line"),
    ("application/jsonlines", "Line"),
    ("text/libsvm", "Line"),
    ("application/x-recordio-protobuf", "RecordIO"),
    ("application/json", "None"),
]


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Server:
    env = {"SM_MODEL_DIR": str(model_dir), "SAGEMAKER_BATCH": "true"}
    with running_server(tmp_path_factory.mktemp("logs"), env) as started:
        yield started


def _post(server: Server, body: bytes, content_type: str, accept: str) -> bytes:
    connection = server.connection()
    try:
        headers = {"Content-Type": content_type, "Accept": accept}
        connection.request("POST", "/invocations", body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        assert response.status == 200, data
        return data
    finally:
        connection.close()


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize(("content_type", "split_type"), INPUTS, ids=[i[0] for i in INPUTS])
def test_score_answers_exactly_as_the_endpoint(
    server: Server, model_dir: Path, tmp_path: Path, content_type: str, split_type: str, accept: str
) -> None:
    bodies = write_inputs(tmp_path / "in", content_type)
    payload_mb = "1" if split_type == "None" else "0.002"
    args = [
        "score", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
        "--model-dir", str(model_dir), "--content-type", content_type, "--accept", accept,
        "--split-type", split_type, "--max-payload-mb", payload_mb, "--workers", "1",
    ]  # fmt: skip
    result = run_cli(args, server_env(server.port, {}))
    assert result.returncode == 0, result.stderr
    expected = {
        f"{name}.out": _post(server, body, content_type, accept) for name, body in bodies.items()
    }
    assert outputs(tmp_path / "out") == expected
