"""The hosts of a training job: ``resourceconfig.json`` and ``SM_HOSTS`` / ``SM_CURRENT_HOST``.

SageMaker writes ``<config_dir>/resourceconfig.json`` (``current_host``, ``hosts``,
``network_interface_name``, and on real jobs ``instance_groups``) on every host of a job. The
training toolkit's ``SM_HOSTS`` (a JSON list) and ``SM_CURRENT_HOST`` override the file's
values when set. Neither present means one host, ``algo-1``: the single-host job as before.
With ``instance_groups``, the hosts are those of the current host's group (heterogeneous
clusters train within one group). The master is ``sorted(hosts)[0]``; a host's index (its
XGBoost task id) is its position in the sorted list. Before the hosts meet, each waits for
every host name to resolve, logging the names still missing, for at most
``SMSERVE_HOST_RESOLVE_TIMEOUT_S`` seconds (default 900, the built-in's 15 minutes).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smserve.config.training import HostSettings
from smserve.training.failure import TrainingError

logger = logging.getLogger(__name__)

SINGLE_HOST = "algo-1"
RESOURCE_CONFIG = "resourceconfig.json"
RESOLVE_POLL_S = 1.0


@dataclass(frozen=True, slots=True)
class Cluster:
    """The job's hosts, sorted, and which one this process is."""

    hosts: tuple[str, ...]
    current: str
    network_interface: str | None = None

    @property
    def size(self) -> int:
        return len(self.hosts)

    @property
    def index(self) -> int:
        """This host's position in the sorted hosts: its task id and rank."""
        return self.hosts.index(self.current)

    @property
    def master(self) -> str:
        return self.hosts[0]

    def among(self, hosts: Sequence[str]) -> Cluster:
        """The same job restricted to ``hosts`` (which must include this host)."""
        return Cluster(tuple(sorted(hosts)), self.current, self.network_interface)


def read_cluster(config_dir: Path, settings: HostSettings) -> Cluster:
    """The job's hosts; raises TrainingError when the configuration contradicts itself."""
    config = _read_resource_config(config_dir / RESOURCE_CONFIG)
    hosts = _hosts(settings.hosts_json, config)
    current = settings.current_host or _text(config.get("current_host")) or hosts[0]
    if current not in hosts:
        raise TrainingError(f"the current host {current!r} is not among the hosts {list(hosts)}")
    return Cluster(hosts, current, _text(config.get("network_interface_name")))


def _read_resource_config(path: Path) -> Mapping[str, Any]:
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise TrainingError(f"{path} is not a readable JSON file: {exc}") from exc
    if not isinstance(raw, dict):
        raise TrainingError(f"{path} must hold a JSON object")
    return raw


def _hosts(hosts_json: str | None, config: Mapping[str, Any]) -> tuple[str, ...]:
    if hosts_json is not None:
        hosts = _host_list(_parse_json("SM_HOSTS", hosts_json), "SM_HOSTS")
    elif "hosts" in config:
        hosts = _host_list(config["hosts"], "resourceconfig.json hosts")
    else:
        hosts = [SINGLE_HOST]
    group = _group_hosts(config)
    return tuple(sorted(h for h in hosts if group is None or h in group))


def _group_hosts(config: Mapping[str, Any]) -> set[str] | None:
    """The hosts of the current instance group, where the config names groups."""
    name, groups = config.get("current_group_name"), config.get("instance_groups")
    if not name or not isinstance(groups, list):
        return None
    for group in groups:
        if isinstance(group, dict) and group.get("instance_group_name") == name:
            return set(_host_list(group.get("hosts"), f"instance group {name!r} hosts"))
    return None


def _parse_json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TrainingError(f"{name}={text!r} is not JSON: {exc}") from None


def _host_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(_text(v) for v in value):
        raise TrainingError(f"{what} must be a non-empty list of host names, not {value!r}")
    if len(set(value)) != len(value):
        raise TrainingError(f"{what} names a host twice: {value!r}")
    return [str(v) for v in value]


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def resolve_all(hosts: Sequence[str], timeout_s: float) -> dict[str, str]:
    """Each host's IPv4 address, waiting up to ``timeout_s`` for the names to resolve."""
    deadline = time.monotonic() + timeout_s
    addresses: dict[str, str] = {}
    while True:
        missing = [host for host in hosts if not _resolve_into(host, addresses)]
        if not missing:
            return addresses
        if time.monotonic() >= deadline:
            raise TrainingError(
                f"host name(s) {', '.join(missing)} did not resolve within {timeout_s:g} s"
            )
        logger.info("waiting for host name(s) to resolve: %s", ", ".join(missing))
        time.sleep(RESOLVE_POLL_S)


def _resolve_into(host: str, addresses: dict[str, str]) -> bool:
    if host not in addresses:
        try:
            addresses[host] = socket.gethostbyname(host)
        except OSError:
            return False
    return True
