"""A real two-node Ray cluster on loopback, for the tests (a fixture in ``conftest``) and the
bench (``python tests/scoring/ray_cluster.py``, stopped by closing its standard input).

A head and a second node, each a raylet with its own CPUs and object store, started with
``ray.cluster_utils.Cluster`` (Ray's own multi-node test cluster: the same gcs_server, raylets
and workers as ``ray start``, with every process a child of the caller, so it is stopped by
its handles). Every process binds to 127.0.0.1 only. Why not ``ray start`` on 127.0.0.2 and
127.0.0.3: Ray's gRPC servers (GCS, raylets, workers) listen on every interface unless a
node's address is exactly 127.0.0.1 (``ss -lntp`` showed gcs_server and both raylets on
``*:PORT``), and Ray rewrites 127.0.0.1 to the machine's network address unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, with which ``ray start --address`` refuses to add a
node. ``Cluster.add_node`` adds it all the same.

``environment`` is what every Ray process of a test run needs, set before Ray is imported:
loopback, token authentication with a token of our own, and Ray's temporary folder (sessions,
sockets and the ``ray_current_cluster`` file that a plain ``ray.init()`` joins) in a folder of
our own, so that nothing another Ray user on the machine did or does matters."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil

NODE_CPUS = 2  # two each: actors (0.5 CPU) never take every CPU from Ray Data's own tasks
OBJECT_STORE_BYTES = 200 * 1024 * 1024
START_TIMEOUT_S = 300  # Cluster's own is 30 s a node, which a loaded 2-core machine exceeds
HEAD_ATTEMPTS = 3  # Ray's head waits a fixed 30 s for its raylet; at load ~18 it ran out once


def environment(folder: Path) -> dict[str, str]:
    """Ray's settings for every process of a run (the token is written into ``folder``)."""
    token = folder / "auth_token"
    token.write_text(secrets.token_hex(32))
    return {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # 127.0.0.1 stays 127.0.0.1
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_TMPDIR": str(folder),
        "RAY_USAGE_STATS_ENABLED": "0",
    }


def use_environment(folder: Path) -> dict[str, str]:
    """``environment`` in this process (before Ray is imported), without an inherited address
    or token that would take precedence over it; returns what it set."""
    for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN"):
        os.environ.pop(name, None)
    settings = environment(folder)
    os.environ.update(settings)
    return settings


class TwoNodeCluster:
    """A head and a second node on 127.0.0.1, ``cpus`` logical CPUs each; ``node_environment``
    is every node's own (credentials, as an instance role would give them)."""

    def __init__(self, cpus: int = NODE_CPUS, node_environment: Mapping[str, str] = {}) -> None:
        self.node_args = {
            "num_cpus": cpus, "node_ip_address": "127.0.0.1", "env_vars": dict(node_environment),
            "object_store_memory": OBJECT_STORE_BYTES,
        }  # fmt: skip
        # No reaper and no exit hook: Ray's reaper makes the caller a process-group leader.
        head = {**self.node_args, "include_dashboard": False, "dashboard_agent_listen_port": None}
        head["wait"] = False  # Cluster's add_node argument: waited for in _add_node instead
        self.cluster = _start_head(head)
        self.second = self._add_node()
        self._remains: list[psutil.Process] = []

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def second_raylet(self) -> psutil.Process:
        return psutil.Process(_raylet(self.second).pid)

    def kill_second_raylet(self) -> None:
        """SIGKILL to the second node's raylet, by PID; its workers and agents (which exit when
        they notice) are remembered, so that ``replace_second_node`` can make sure of them."""
        self._remains = self.second_raylet().children(recursive=True)
        raylet = _raylet(self.second)
        raylet.kill()
        raylet.wait(timeout=30)  # reaped through its handle, as Ray's own kill does

    def processes(self) -> list[psutil.Process]:
        """Every live process of the cluster: each node's own and its raylet's descendants
        (workers, actors, agents)."""
        found: list[psutil.Process] = []
        for node in self.cluster.list_all_nodes():
            for info in (i for infos in node.all_processes.values() for i in infos):
                if info.process.poll() is None:
                    found.append(psutil.Process(info.process.pid))
        return found + [child for p in found for child in _descendants(p)]

    def replace_second_node(self) -> None:
        """A fresh second node after ``kill_second_raylet``: the old node's processes stopped by
        handle, any of its workers still alive after 30 s by PID."""
        _, alive = psutil.wait_procs(self._remains, timeout=30)
        with _quiet_teardown():
            for process in alive:
                _kill(process)
            self.cluster.remove_node(self.second, allow_graceful=False)
        self.second = self._add_node()

    def stop(self) -> None:
        """Every node's processes, by handle, and then any worker they left (by PID)."""
        left = [child for p in self.processes() for child in _descendants(p)]
        with _quiet_teardown():
            self.cluster.shutdown()
            for process in left:
                _kill(process)

    def _add_node(self) -> Any:
        node = self.cluster.add_node(wait=False, **self.node_args)
        self.cluster.wait_for_nodes(timeout=START_TIMEOUT_S)
        return node


def _start_head(head: dict[str, Any]) -> Any:
    """A ``Cluster`` with its head started. Ray's head gives its raylet a fixed 30 s to
    register, which a heavily loaded machine can exceed; the failed attempt's processes are
    left without handles, so they are killed by PID (this process's descendants that appeared
    during the attempt) and the head is tried again."""
    from ray.cluster_utils import Cluster

    failure = ""
    for _ in range(HEAD_ATTEMPTS):
        before = {p.pid for p in _descendants(psutil.Process())}
        with _quiet_teardown():  # where a failed attempt's Popen handles are dropped
            try:
                return Cluster(initialize_head=True, head_node_args=head, shutdown_at_exit=False)
            except Exception as error:  # Ray raises a bare Exception for the timeout
                failure = f"{type(error).__name__}: {error}"
            _stop_started_since(before)
    raise RuntimeError(f"the Ray head did not start in {HEAD_ATTEMPTS} attempts: {failure}")


def _stop_started_since(before: set[int]) -> None:
    with _quiet_teardown():
        for process in _descendants(psutil.Process()):
            if process.pid not in before:
                _kill(process)


@contextlib.contextmanager
def _quiet_teardown() -> Iterator[None]:
    """Ray's process handles are waited for (``wait=True``), but a handle Ray drops before its
    process is reaped (a loaded machine) gives a ResourceWarning from Ray's internals: ignored
    here, where Ray's objects go, with Python's collector run before the filter is lifted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
        gc.collect()


def _raylet(node: Any) -> Any:
    from ray._private import ray_constants

    return node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process


def _descendants(process: psutil.Process) -> Iterator[psutil.Process]:
    try:
        yield from process.children(recursive=True)
    except psutil.NoSuchProcess:
        return


def _kill(process: psutil.Process) -> None:
    try:
        process.kill()
        process.wait(timeout=10)
    except psutil.NoSuchProcess:
        pass


def main() -> None:
    """For the bench: start a cluster, print ``{"address", "environment"}`` as one JSON line,
    and stop it when standard input closes (or on SIGTERM)."""
    folder = Path(tempfile.mkdtemp(prefix="smserve-ray-", dir="/tmp"))
    settings = use_environment(folder)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    cluster = TwoNodeCluster(int(sys.argv[1]) if len(sys.argv) > 1 else NODE_CPUS)
    try:
        print(json.dumps({"address": cluster.address, "environment": settings}))
        sys.stdout.flush()
        sys.stdin.read()
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
