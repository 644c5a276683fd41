"""The KServe manifest's predictor as a plain Kubernetes Deployment, to run it without KServe.

    python container/kserve_deployment.py --image smserve:local --model-dir /srv/model \\
        --host-port 8080=18080 > deployment.yaml
    podman kube play deployment.yaml          # then: podman kube down deployment.yaml

``podman kube play`` (and any Kubernetes cluster) accepts a Deployment but not KServe's
``InferenceService`` kind. The Deployment holds the predictor container exactly as
container/kserve-inferenceservice.yaml declares it (args, env, ports, probes, resources), with
only these changes: ``--image`` replaces the manifest's placeholder image; ``--model-dir`` is
mounted read-only at ``/mnt/models``, where KServe's storage initializer leaves the model (in
the volume KServe names ``kserve-provision-location``); and each ``--host-port`` publishes a
container port on ``--host-ip`` (loopback by default). ``minReplicas`` becomes ``replicas``.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).resolve().parent / "kserve-inferenceservice.yaml"
MODEL_MOUNT = "/mnt/models"
MODEL_VOLUME = "kserve-provision-location"


def predictor(manifest: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The InferenceService's name and its predictor spec; refuses any other kind."""
    kind = (manifest.get("apiVersion"), manifest.get("kind"))
    if kind != ("serving.kserve.io/v1beta1", "InferenceService"):
        raise ValueError(f"not a KServe v1beta1 InferenceService: {kind}")
    return str(manifest["metadata"]["name"]), dict(manifest["spec"]["predictor"])


def deployment(
    manifest: dict[str, Any],
    image: str,
    model_dir: Path,
    host_ports: dict[int, int],
    host_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The Deployment (see the module doc); ``host_ports`` maps container ports to host ports."""
    name, spec = predictor(manifest)
    (source,) = spec["containers"]
    container = copy.deepcopy(source)
    container["image"] = image
    for port in container["ports"]:
        if port["containerPort"] in host_ports:
            port.update(hostPort=host_ports[port["containerPort"]], hostIP=host_ip)
    unknown = set(host_ports) - {port["containerPort"] for port in container["ports"]}
    if unknown:
        raise ValueError(f"the manifest declares no container port {sorted(unknown)}")
    container["volumeMounts"] = [{"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT, "readOnly": True}]
    labels = {"app": name}
    pod = {
        "containers": [container],
        "volumes": [
            {"name": MODEL_VOLUME, "hostPath": {"path": str(model_dir), "type": "Directory"}}
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{name}-predictor", "labels": labels},
        "spec": {
            "replicas": int(spec.get("minReplicas", 1)),
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def _port_pair(text: str) -> tuple[int, int]:
    container, _, host = text.partition("=")
    try:
        return int(container), int(host)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected PORT=HOST_PORT, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True, help="the image to run")
    parser.add_argument("--model-dir", required=True, type=Path, help="mounted at /mnt/models")
    parser.add_argument(
        "--host-port", action="append", type=_port_pair, default=[], metavar="PORT=HOST_PORT"
    )
    parser.add_argument("--host-ip", default="127.0.0.1", help="where host ports listen")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    args = parser.parse_args(argv)
    manifest = yaml.safe_load(args.manifest.read_text())
    document = deployment(
        manifest, args.image, args.model_dir.resolve(), dict(args.host_port), args.host_ip
    )
    yaml.safe_dump(document, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
