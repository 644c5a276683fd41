"""SDK v3 ``ModelBuilder`` in ``Mode.LOCAL_CONTAINER`` deploying the image and invoking it,
for XGBoost and k-means, with a NumPy input sample (sent as ``application/x-npy``); answers
equal to in-process.

Settings the SDK forces, pinned here (docs/sagemaker-sdk.md lists them):
* ``SAGEMAKER_VALIDATE_ROLE=false`` and an ``s3_model_data_url``: otherwise it calls STS and
  IAM (the URL is never used in local mode);
* ``model_path`` a folder (the unpacked model), mounted as /opt/ml/model;
* ``model_server=ModelServer.TORCHSERVE``: without a model server no container starts; this
  one runs ``docker run IMAGE serve`` with host port 8080 (fixed by the SDK: 8080 must be
  free) and invokes ``/invocations`` unchanged;
* ``endpoint.delete()`` leaves the container running: the test removes it.
The time from ``deploy()`` to the first answer goes to the container test's summary (the file
SMSERVE_V3_TIMINGS names).

The sample output is a list: the SDK ``json.dumps()``es every deserialized answer, its health
check's too (a POST of the NumPy sample as ``application/x-npy`` every ~20 s), which an array or
a DataFrame is not; so answers are asked for as JSON. ``endpoint.delete()`` stops the SDK's own
compose process, whose waiting thread then raises (ignored below).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.local_mode_v3 import v3_local as v3

# endpoint.delete() stops the compose process the SDK started for its local session, and the
# SDK's thread waiting on it raises; its pipes are left open.
pytestmark = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning",
    "ignore::ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)


@pytest.mark.parametrize("algorithm", ["xgboost", "kmeans"])
def test_model_builder_local_container_deploy_and_invoke(
    image: str, algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    # Imported offline: importing ModelBuilder creates a boto3 client (it needs a region).
    from sagemaker.serve.builder.schema_builder import SchemaBuilder
    from sagemaker.serve.mode.function_pointers import Mode
    from sagemaker.serve.model_builder import ModelBuilder
    from sagemaker.serve.utils.types import ModelServer

    model_dir = v3.model_folder(algorithm, tmp_path / "model")
    rows = v3.features(seed=7)
    # A list: the SDK json.dumps()es every deserialized answer (its health check too), which an
    # array or DataFrame is not; so the answer is asked for as JSON. The sample goes as .npy.
    sample_output = [{"score": 0.5}]
    builder = ModelBuilder(
        model_path=str(model_dir),
        image_uri=image,
        mode=Mode.LOCAL_CONTAINER,
        model_server=ModelServer.TORCHSERVE,
        schema_builder=SchemaBuilder(sample_input=rows[:2], sample_output=sample_output),
        role_arn=v3.ROLE,
        s3_model_data_url="s3://smserve-never-used/model/",
    )
    before = v3.running(image)
    started = time.monotonic()
    try:
        builder.build()
        endpoint = builder.deploy(endpoint_name=f"smserve-v3-{algorithm}")
        document = json.loads(endpoint.invoke(body=rows).body.read())
        first = time.monotonic() - started
        timings = os.environ.get("SMSERVE_V3_TIMINGS")  # local_test/sdk_v3_test.sh's summary
        if timings:
            with open(timings, "a", encoding="utf-8") as out:
                out.write(f"{algorithm} {first:.1f} s\n")
        v3.assert_answer(algorithm, model_dir, rows, json_rows(algorithm, document))
        endpoint.delete()
    finally:
        for container in v3.running(image) - before:  # what delete() leaves running
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)


def json_rows(algorithm: str, document: dict[str, Any]) -> list[list[float]]:
    keys = ("score",) if algorithm == "xgboost" else ("closest_cluster", "distance_to_cluster")
    return [[p[key] for key in keys] for p in document["predictions"]]
