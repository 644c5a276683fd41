"""The job's hosts from resourceconfig.json and SM_HOSTS / SM_CURRENT_HOST."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from smserve.config.training import HostSettings
from smserve.training.cluster import Cluster, read_cluster, resolve_all
from smserve.training.failure import TrainingError


def write_config(folder: Path, config: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "resourceconfig.json").write_text(json.dumps(config))
    return folder


def test_no_resource_config_is_one_host(tmp_path: Path) -> None:
    cluster = read_cluster(tmp_path, HostSettings())
    assert cluster == Cluster(("algo-1",), "algo-1")
    assert cluster.size == 1


def test_hosts_are_sorted_and_the_master_is_the_first(tmp_path: Path) -> None:
    config = {"current_host": "algo-2", "hosts": ["algo-3", "algo-1", "algo-2"]}
    cluster = read_cluster(write_config(tmp_path, config), HostSettings())
    assert cluster.hosts == ("algo-1", "algo-2", "algo-3")
    assert (cluster.master, cluster.index, cluster.size) == ("algo-1", 1, 3)


def test_sm_hosts_and_sm_current_host_override_the_file(tmp_path: Path) -> None:
    folder = write_config(tmp_path, {"current_host": "algo-1", "hosts": ["algo-1"]})
    settings = HostSettings(hosts_json='["b", "a"]', current_host="b")
    assert read_cluster(folder, settings) == Cluster(("a", "b"), "b")


def test_instance_groups_limit_the_hosts_to_the_current_group(tmp_path: Path) -> None:
    config = {
        "current_host": "algo-2",
        "current_group_name": "train",
        "hosts": ["algo-1", "algo-2", "algo-3"],
        "network_interface_name": "eth0",
        "instance_groups": [
            {"instance_group_name": "other", "hosts": ["algo-1"]},
            {"instance_group_name": "train", "hosts": ["algo-3", "algo-2"]},
        ],
    }
    cluster = read_cluster(write_config(tmp_path, config), HostSettings())
    assert cluster == Cluster(("algo-2", "algo-3"), "algo-2", "eth0")


@pytest.mark.parametrize(
    ("config", "settings", "message"),
    [
        ({"current_host": "x", "hosts": ["a"]}, HostSettings(), "'x' is not among the hosts"),
        ({"hosts": []}, HostSettings(), "must be a non-empty list of host names"),
        ({"hosts": ["a", "a"]}, HostSettings(), "names a host twice"),
        ({}, HostSettings(hosts_json="[a"), "SM_HOSTS='[a' is not JSON"),
        ([], HostSettings(), "must hold a JSON object"),
    ],
    ids=["stranger", "empty", "twice", "bad-env", "not-an-object"],
)
def test_contradictory_configurations_fail(
    tmp_path: Path, config: object, settings: HostSettings, message: str
) -> None:
    with pytest.raises(TrainingError, match=re.escape(message)):
        read_cluster(write_config(tmp_path, config), settings)


def test_resolution_is_bounded_and_names_the_missing_host() -> None:
    assert resolve_all(["127.0.0.2", "localhost"], 1.0)["127.0.0.2"] == "127.0.0.2"
    started = time.monotonic()
    with pytest.raises(TrainingError, match=r"no-such-host\.invalid did not resolve within 1 s"):
        resolve_all(["127.0.0.2", "no-such-host.invalid"], 1.0)
    assert time.monotonic() - started < 10
