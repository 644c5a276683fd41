"""SDK v3 ``ModelBuilder`` in ``Mode.LOCAL_CONTAINER`` deploying the image and invoking it,
for XGBoost and k-means, with NumPy samples (its health check POSTs the sample to
/invocations as ``application/x-npy``, answered as ``.npy``); answers equal to in-process.

Settings the SDK forces, pinned here (docs/sagemaker-sdk.md lists them):
* ``SAGEMAKER_VALIDATE_ROLE=false`` and an ``s3_model_data_url``: otherwise it calls STS and
  IAM (the URL is never used in local mode);
* ``model_path`` a folder (the unpacked model), mounted as /opt/ml/model;
* ``model_server=ModelServer.TORCHSERVE``: without a model server no container starts; this
  one runs ``docker run IMAGE serve`` with host port 8080 (fixed by the SDK: 8080 must be
  free) and invokes ``/invocations`` unchanged;
* ``endpoint.delete()`` leaves the container running: the test removes it.
The time from ``deploy()`` to the first answer is printed for the container test's summary.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.local_mode_v3 import v3_local as v3

SUMMARY_PREFIX = "v3-model-builder-first-answer"


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
    sample_output = v3.expected(algorithm, model_dir, rows[:2]).astype(np.float32)
    builder = ModelBuilder(
        model_path=str(model_dir),
        image_uri=image,
        mode=Mode.LOCAL_CONTAINER,
        model_server=ModelServer.TORCHSERVE,
        schema_builder=SchemaBuilder(sample_input=rows[:2], sample_output=sample_output),
        role_arn=v3.ROLE,
        s3_model_data_url="s3://smserve-never-used/model/",
    )
    before = set(v3.running_containers(image))
    started = time.monotonic()
    try:
        builder.build()
        endpoint = builder.deploy(endpoint_name=f"smserve-v3-{algorithm}")
        answer = endpoint.invoke(body=rows).body
        first = time.monotonic() - started
        print(f"\n{SUMMARY_PREFIX} {algorithm} {first:.1f} s")
        v3.assert_answer(algorithm, model_dir, rows, answer)
        endpoint.delete()
    finally:
        for container in set(v3.running_containers(image)) - before:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)
