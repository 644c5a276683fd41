"""container/kserve_deployment.py: the KServe manifest's predictor as a Deployment that Kubernetes'
own schemas accept (kubernetes-validate --strict), the container exactly as the manifest says.
tests/local_mode/test_kserve_pod.py plays it with podman against the image."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.container.container_modules import CONTAINER, load

kserve_deployment = load(CONTAINER / "kserve_deployment.py")
MANIFEST: dict[str, Any] = yaml.safe_load((CONTAINER / "kserve-inferenceservice.yaml").read_text())
VALIDATE = Path(sys.executable).with_name("kubernetes-validate")


def generate(tmp_path: Path, **ports: int) -> dict[str, Any]:
    host_ports = {int(port.removeprefix("p")): host for port, host in ports.items()}
    document: dict[str, Any] = kserve_deployment.deployment(
        MANIFEST, "smserve:test", tmp_path, host_ports
    )
    return document


def pod_container(document: dict[str, Any]) -> dict[str, Any]:
    (container,) = document["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_container_is_the_manifests_with_only_image_mount_and_host_port(
    tmp_path: Path,
) -> None:
    container = pod_container(generate(tmp_path, p8080=18080))
    (declared,) = MANIFEST["spec"]["predictor"]["containers"]
    expected = copy.deepcopy(declared)
    expected["image"] = "smserve:test"
    for port in expected["ports"]:
        if port["containerPort"] == 8080:
            port.update(hostPort=18080, hostIP="127.0.0.1")
    expected["volumeMounts"] = [
        {"name": "kserve-provision-location", "mountPath": "/mnt/models", "readOnly": True}
    ]
    assert container == expected


def test_the_model_folder_is_the_volume_and_replicas_follow_min_replicas(tmp_path: Path) -> None:
    document = generate(tmp_path, p8080=18080)
    spec = document["spec"]
    assert spec["replicas"] == MANIFEST["spec"]["predictor"]["minReplicas"]
    (volume,) = spec["template"]["spec"]["volumes"]
    assert volume == {
        "name": "kserve-provision-location",
        "hostPath": {"path": str(tmp_path), "type": "Directory"},
    }
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]


def test_the_deployment_passes_kubernetes_validate_strict(tmp_path: Path) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(generate(tmp_path, p8080=18080)))
    done = subprocess.run([VALIDATE, "--strict", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_kubernetes_validate_strict_refuses_an_unknown_field(tmp_path: Path) -> None:
    """The check above can fail: a misspelt container field is refused in strict mode."""
    document = generate(tmp_path, p8080=18080)
    document["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(document))
    done = subprocess.run([VALIDATE, "--strict", str(path)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "readinesProbe" in done.stdout + done.stderr


def test_a_host_port_for_an_undeclared_container_port_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no container port"):
        generate(tmp_path, p9999=19999)


def test_only_an_inference_service_is_read() -> None:
    with pytest.raises(ValueError, match="not a KServe v1beta1 InferenceService"):
        kserve_deployment.predictor({"apiVersion": "apps/v1", "kind": "Deployment"})


def test_the_command_line_prints_the_deployment(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(CONTAINER / "kserve_deployment.py"),
            "--image=smserve:test",
            f"--model-dir={tmp_path}",
            "--host-port=8080=18080",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert yaml.safe_load(done.stdout) == generate(tmp_path, p8080=18080)
