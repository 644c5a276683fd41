"""``smserve score --engine ray --address ...`` (the command, in a subprocess) against the real
two-node loopback cluster (``ray_cluster``), each answer compared with the local engine's bytes:
every input format, relative paths from another folder, ``s3://`` read on both nodes, every
process on loopback during a job, and a node killed mid-job.

A job is held mid-way by a real mechanism, not by timing: the second node's actor is frozen
(SIGSTOP) while it has a shard's input file open, so the job cannot finish until it goes on.
The engine deals the first shards to its actors in turn, so each node's actor gets shards
however slowly the second one starts."""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import psutil
import pytest

from tests.process.servers import SMSERVE, run_cli, server_env
from tests.scoring.conftest import S3Service, csv_body, outputs, write_inputs
from tests.scoring.ray_cluster import TwoNodeCluster

pytest.importorskip("ray")

pytestmark = pytest.mark.process

TINY_BATCHES = ["--max-payload-mb", "0.0005", "--workers", "2"]  # several shards a file
JOB_TIMEOUT_S = 300  # two cores shared with other work: actors can take a minute to start


def _score(
    args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = [str(SMSERVE), "score", *args]
    environment = env or server_env(8080, {})
    result = subprocess.run(
        command, env=environment, cwd=cwd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _on(cluster: TwoNodeCluster) -> list[str]:
    return ["--engine", "ray", "--address", cluster.address]


FORMATS = [  # content type, split type, max payload (MiB), accept
    ("text/csv", "Line", "0.0005", "text/csv"),
    ("application/jsonlines", "Line", "0.0005", "application/jsonlines"),
    ("application/x-recordio-protobuf", "RecordIO", "0.0005", "application/x-recordio-protobuf"),
    ("application/x-parquet", "None", "1", "application/x-parquet"),
]


@pytest.mark.parametrize(("content_type", "split", "payload_mb", "accept"), FORMATS,
                         ids=[f[0].split("/")[1] for f in FORMATS])  # fmt: skip
def test_every_input_format_gives_the_local_engines_bytes(
    ray_cluster: TwoNodeCluster, model_dir: Path, tmp_path: Path,
    content_type: str, split: str, payload_mb: str, accept: str,
) -> None:  # fmt: skip
    write_inputs(tmp_path / "in", content_type)
    args = [
        str(tmp_path / "in"), "--model-dir", str(model_dir), "--content-type", content_type,
        "--split-type", split, "--accept", accept, "--max-payload-mb", payload_mb, "--workers", "2",
    ]  # fmt: skip
    _score([*args, "--output", str(tmp_path / "local")])
    _score([*args, "--output", str(tmp_path / "ray"), *_on(ray_cluster)])
    expected = outputs(tmp_path / "local")
    assert len(expected) == 3
    assert outputs(tmp_path / "ray") == expected


def test_relative_paths_are_made_absolute_before_the_job_is_submitted(
    ray_cluster: TwoNodeCluster, model_dir: Path, tmp_path: Path
) -> None:
    """Run from another folder than the cluster's processes; both nodes answer shards."""
    job = tmp_path / "job"
    write_inputs(job / "in", "text/csv")
    shutil.copytree(model_dir, job / "model")
    args = ["in", "--model-dir", "model", "--content-type", "text/csv", *TINY_BATCHES]
    _score([*args, "--output", "local"], cwd=job)
    on_ray = _score([*args, "--output", "ray", *_on(ray_cluster)], cwd=job)
    assert outputs(job / "ray") == outputs(job / "local")
    assert "shards answered on 2 nodes" in on_ray.stderr


def test_s3_inputs_are_read_and_outputs_written_from_a_two_node_job(
    ray_cluster: TwoNodeCluster, s3: S3Service, model_dir: Path, tmp_path: Path
) -> None:
    """The driver's endpoint travels with each shard; each node has its own credentials."""
    write_inputs(tmp_path / "in", "text/csv")
    s3.upload(tmp_path / "in", "cluster-in")
    base = ["--model-dir", str(model_dir), "--content-type", "text/csv", *TINY_BATCHES]
    _score([str(tmp_path / "in"), *base, "--output", str(tmp_path / "local")], s3.env())
    source, target = f"s3://{s3.bucket}/cluster-in", f"s3://{s3.bucket}/cluster-out"
    on_ray = _score([source, *base, "--output", target, *_on(ray_cluster)], s3.env())
    assert s3.objects("cluster-out") == outputs(tmp_path / "local")
    assert "shards answered on 2 nodes" in on_ray.stderr


def _big_inputs(folder: Path) -> None:
    """Six CSV files of about 40 shards each at TINY_BATCHES' mini-batch size: on a quiet
    machine two files' shards were all answered before the second node's actor was seen
    with one open (the job took 0.2 s), and the held-job tests failed."""
    rng = np.random.default_rng(11)
    folder.mkdir(parents=True)
    for name in ("a.csv", "b.csv", "c.csv", "d.csv", "e.csv", "f.csv"):
        (folder / name).write_bytes(csv_body(rng.normal(size=(1000, 4)).astype(np.float32)))


@contextlib.contextmanager
def _held_mid_job(
    cluster: TwoNodeCluster, args: Sequence[str], log: Path
) -> Iterator[tuple[subprocess.Popen[bytes], psutil.Process]]:
    """The command running, and the second node's actor frozen inside a shard of ``args[0]``
    (its input file open); the actor goes on (SIGCONT) when the block ends."""
    env = server_env(8080, {})
    with log.open("wb") as sink:
        process = subprocess.Popen([str(SMSERVE), "score", *args], env=env, stderr=sink)
    try:
        actor = _frozen_in_a_shard(cluster, process, Path(args[0]), log)
        try:
            yield process, actor
        finally:
            with contextlib.suppress(psutil.NoSuchProcess):
                actor.resume()
        process.wait(timeout=JOB_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()


def _frozen_in_a_shard(
    cluster: TwoNodeCluster, job: subprocess.Popen[bytes], inputs: Path, log: Path
) -> psutil.Process:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline and job.poll() is None:
        for actor in _actors(cluster.second_raylet()):
            with contextlib.suppress(psutil.NoSuchProcess):
                actor.suspend()
                if any(Path(f.path).is_relative_to(inputs) for f in actor.open_files()):
                    return actor
                actor.resume()
        time.sleep(0.005)
    raise AssertionError(f"the second node's actor was never seen in a shard: {log.read_text()}")


def _actors(raylet: psutil.Process) -> list[psutil.Process]:
    """The engine's actors among the raylet's workers (their titles name the actor class)."""
    found = []
    for worker in raylet.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            if " ".join(worker.cmdline()).startswith("ray::ShardScorer"):
                found.append(worker)
    return found


def _non_loopback(processes: Sequence[psutil.Process]) -> list[str]:
    """Every listening or connected inet socket of ``processes`` off 127.0.0.0/8."""
    found = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            for sock in process.net_connections(kind="inet"):
                for address in (sock.laddr, sock.raddr):
                    if address and not _loopback(address.ip):
                        found.append(f"{process.pid} {process.name()}: {sock}")
    return found


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def test_every_process_of_a_job_binds_and_talks_to_loopback_only(
    ray_cluster: TwoNodeCluster, model_dir: Path, tmp_path: Path
) -> None:
    """Checked while a job is held mid-way: the cluster's processes (GCS, raylets, agents,
    workers, both actors) and the command's own, listening and connected sockets alike."""
    _big_inputs(tmp_path / "in")
    args = [str(tmp_path / "in"), "--model-dir", str(model_dir), "--content-type", "text/csv"]
    args += [*TINY_BATCHES, "--output", str(tmp_path / "ray"), *_on(ray_cluster)]
    with _held_mid_job(ray_cluster, args, tmp_path / "log") as (job, actor):
        processes = [*ray_cluster.processes(), psutil.Process(job.pid)]
        assert actor in processes
        assert len(processes) > 10
        assert _non_loopback(processes) == []
    assert job.returncode == 0


def test_a_node_killed_mid_job_has_its_shards_answered_again(
    ray_cluster: TwoNodeCluster, model_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL to the second node's raylet while its actor holds a shard: Ray restarts the
    actor on the head and the shards are answered again, to the local engine's bytes."""
    _big_inputs(tmp_path / "in")
    args = [str(tmp_path / "in"), "--model-dir", str(model_dir), "--content-type", "text/csv"]
    args += TINY_BATCHES
    local = run_cli(["score", *args, "--output", str(tmp_path / "local")], server_env(8080, {}))
    assert local.returncode == 0, local.stderr
    try:
        ray_args = [*args, "--output", str(tmp_path / "ray"), *_on(ray_cluster)]
        with _held_mid_job(ray_cluster, ray_args, tmp_path / "log") as (job, actor):
            ray_cluster.kill_second_raylet()
        assert job.returncode == 0, (tmp_path / "log").read_text()[-3000:]
        assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    finally:
        ray_cluster.replace_second_node()
