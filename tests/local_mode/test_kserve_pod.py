"""container/kserve-inferenceservice.yaml's predictor as a pod, under ``podman kube play``.

No Kubernetes control plane can run here, so this is as close as a test gets: the Deployment
that container/kserve_deployment.py builds from the manifest (the predictor container exactly as
declared, the model mounted read-only at /mnt/models as KServe's storage initializer leaves it,
each container port published on loopback) is played by podman, which applies the container's
args, env, ports and resources as a kubelet would. podman ignores ``readinessProbe`` and turns
``livenessProbe`` into a ``curl`` health check (the image has no curl), so the probe paths the
manifest names are polled from here. Then the V2 and /invocations answers are compared with the
same model served in this process, and the pod is stopped as a kubelet stops it (SIGTERM, 30 s
grace) and torn down with ``podman kube down``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON
from tests.container.container_modules import CONTAINER, load
from tests.local_mode import sdk_local

kserve_deployment = load(CONTAINER / "kserve_deployment.py")
MANIFEST = yaml.safe_load((CONTAINER / "kserve-inferenceservice.yaml").read_text())
(PREDICTOR,) = MANIFEST["spec"]["predictor"]["containers"]
HTTP_PORT = int(PREDICTOR["readinessProbe"]["httpGet"]["port"])
ROWS = sdk_local.FEATURES[:20]
READY_WITHIN_S = 90
GRACE_S = 30  # a pod's default terminationGracePeriodSeconds


@dataclass
class Pod:
    pod_id: str
    container_id: str
    host_ports: dict[int, int]

    def url(self, port: int, path: str) -> str:
        return f"http://127.0.0.1:{self.host_ports[port]}{path}"


def podman(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr}"
    return done.stdout


def _played_ids(output: str) -> tuple[str, str]:
    """The pod's and its one container's IDs from ``podman kube play``'s report."""
    lines = [line.strip() for line in output.splitlines()]
    pod = lines[lines.index("Pod:") + 1]
    (container,) = lines[lines.index("Container:") + 1 :][:1]
    return pod, container


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as KServe's storage initializer leaves it: the model file at its top level."""
    folder = tmp_path_factory.mktemp("mnt-models")
    (folder / "xgboost-model").write_bytes(sdk_local.xgboost_model(sdk_local.FEATURES))
    return folder


@pytest.fixture(scope="module")
def in_process(model_dir: Path) -> FlaskClient:
    return create_app(Settings.from_env({"SM_MODEL_DIR": str(model_dir)})).test_client()


@pytest.fixture(scope="module")
def deployment_file(image: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ports = {port["containerPort"]: sdk_local.free_port() for port in PREDICTOR["ports"]}
    document = kserve_deployment.deployment(MANIFEST, image, model_dir, ports)
    path = tmp_path_factory.mktemp("kube") / "deployment.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def pod(deployment_file: Path) -> Iterator[Pod]:
    assert shutil.which("podman"), "podman kube play needs podman: local_test/container_engine.sh"
    document = yaml.safe_load(deployment_file.read_text())
    (container,) = document["spec"]["template"]["spec"]["containers"]
    ports = {port["containerPort"]: port["hostPort"] for port in container["ports"]}
    pod_id, container_id = _played_ids(podman("kube", "play", str(deployment_file)))
    try:
        played = Pod(pod_id, container_id, ports)
        _wait_until_ready(played)
        yield played
    finally:
        podman("kube", "down", str(deployment_file))


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def post(url: str, body: bytes, content_type: str, accept: str) -> bytes:
    headers = {"Content-Type": content_type, "Accept": accept}
    request = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        return bytes(response.read())


def probe(pod: Pod, name: str) -> str:
    check = PREDICTOR[name]["httpGet"]
    return pod.url(int(check["port"]), str(check["path"]))


def _wait_until_ready(pod: Pod) -> None:
    """Polls the manifest's readiness path, as a kubelet would; podman does not."""
    deadline = time.monotonic() + READY_WITHIN_S
    while get(probe(pod, "readinessProbe")) != 200:
        assert time.monotonic() < deadline, f"not ready in {READY_WITHIN_S} s: {logs(pod)}"
        time.sleep(0.2)


def test_the_readiness_and_liveness_paths_answer(pod: Pod) -> None:
    assert get(probe(pod, "readinessProbe")) == 200
    assert get(probe(pod, "livenessProbe")) == 200


def logs(pod: Pod) -> str:
    """The server's output (``podman logs`` replays the container's stderr on its own)."""
    done = subprocess.run(
        ["podman", "logs", pod.container_id], capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


def test_the_manifests_resources_reach_the_server(pod: Pod) -> None:
    """The memory limit the manifest declares is the cgroup limit the server sized itself by."""
    mib = mebibytes(PREDICTOR["resources"]["limits"]["memory"])
    assert f"{mib} MiB of memory (cgroup" in logs(pod)


def mebibytes(quantity: str) -> int:
    """A Kubernetes memory quantity in Mi or Gi, in MiB."""
    for suffix, factor in (("Gi", 1024), ("Mi", 1)):
        if quantity.endswith(suffix):
            return int(quantity.removesuffix(suffix)) * factor
    raise AssertionError(f"this test reads Mi and Gi quantities only: {quantity}")


def test_v2_inference_answers_like_the_model_in_process(pod: Pod, in_process: FlaskClient) -> None:
    body = json.dumps(
        {
            "inputs": [
                {
                    "name": "input-0",
                    "shape": list(ROWS.shape),
                    "datatype": "FP32",
                    "data": ROWS.ravel().tolist(),
                }
            ]
        }
    ).encode()
    answer = post(pod.url(HTTP_PORT, "/v2/models/model/infer"), body, JSON, JSON)
    expected = in_process.post("/v2/models/model/infer", data=body, content_type=JSON)
    assert expected.status_code == 200, expected.data
    assert json.loads(answer) == expected.json
    assert json.loads(answer)["outputs"][0]["shape"][0] == len(ROWS)


def test_invocations_answers_like_the_model_in_process(pod: Pod, in_process: FlaskClient) -> None:
    body = sdk_local.csv_rows(ROWS)
    answer = post(pod.url(HTTP_PORT, "/invocations"), body, CSV, CSV)
    assert answer == sdk_local.reference(in_process, body, CSV, CSV)
    assert len(answer.splitlines()) == len(ROWS)


def test_the_pod_stops_cleanly_on_sigterm_within_the_grace_period(pod: Pod) -> None:
    """Last in this module: a kubelet's stop (SIGTERM, then SIGKILL after the grace period)."""
    started = time.monotonic()
    podman("pod", "stop", "-t", str(GRACE_S), pod.pod_id, timeout=GRACE_S + 30)
    took = time.monotonic() - started
    state: Any = json.loads(podman("inspect", pod.container_id))[0]["State"]
    assert state["ExitCode"] == 0, logs(pod)
    assert not state["OOMKilled"]
    # Within the grace period, before the kubelet's SIGKILL (exit 0 above: not killed). On a
    # loaded machine the drain has been seen to take the server's whole graceful timeout
    # (25.3-25.4 s in 2 of 6 full runs, 2-3 s otherwise): under investigation, see the note.
    assert took < GRACE_S, f"stopping took {took:.1f} s"
