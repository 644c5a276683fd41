"""container/kserve-inferenceservice.yaml points KServe's probes at this door's health routes
and at the port the image serves, and names the gRPC port h2c, as KServe wants it (the pod
itself runs under podman in tests/local_mode/test_kserve_pod.py; no Kubernetes cluster can run
here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from smserve import door_table
from smserve.config import Settings
from smserve.v2.routes import parse_route
from smserve.v2grpc.port import grpc_port

MANIFEST = Path(__file__).parents[2] / "container" / "kserve-inferenceservice.yaml"


def _container() -> dict[str, Any]:
    document = yaml.safe_load(MANIFEST.read_text())
    assert (document["apiVersion"], document["kind"]) == (
        "serving.kserve.io/v1beta1",
        "InferenceService",
    )
    (container,) = document["spec"]["predictor"]["containers"]
    return dict(container)


def test_the_probes_are_the_v2_health_routes_on_the_served_port() -> None:
    container = _container()
    env = {item["name"]: item["value"] for item in container["env"]}
    settings = door_table.read_settings(Settings.from_env(env), env)
    port = settings.port
    assert [p["containerPort"] for p in container["ports"]] == [port, grpc_port(settings)]
    assert [p.get("name") for p in container["ports"]] == [None, "h2c"]  # KServe's gRPC port
    for probe, action in (("readinessProbe", "ready"), ("livenessProbe", "live")):
        check = container[probe]["httpGet"]
        assert check["port"] == port
        assert parse_route("GET", check["path"]).action == action


def test_the_model_is_read_where_the_storage_initializer_writes_it() -> None:
    container = _container()
    env = {item["name"]: item["value"] for item in container["env"]}
    assert Settings.from_env(env).model_dir == Path("/mnt/models")
    assert container["args"] == ["serve"]
