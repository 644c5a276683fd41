"""``smserve score --engine ray``: the same files, the same answers as the local engine, scored
on a Ray cluster (``--address``; default: a local one).

The driver plans the local engine's shards (``smserve.scoring.shards``: runs of whole
mini-batches of a file, so one big file is many tasks, not one read task) and sends them to
``workers`` actors (``ShardScorer``, each loading the model once, spread over the nodes) with
Ray's core API (``OrderedPool``: a few shards queued per actor, each to whichever is free).
The actors read their shards themselves, from a path every node sees or from ``s3://``, and
answer them with the local engine's worker code. Answers come back in input order and are
assembled by the driver exactly as the local engine assembles them, each file atomically.
Memory per actor is one shard and its answer; the driver holds at most a few answers per
actor ahead of the one being written.

Paths are made absolute before the job is submitted: actors on other nodes do not run in the
driver's folder. When a node dies mid-job, its actors are restarted elsewhere and the shards
they held are answered again (answers are per shard, so the output is the same bytes); the
log says how many shards each node answered."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import time
from collections import Counter
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.scoring import worker
from smserve.scoring.assemble import Assembler, OpenFile, Summary, shards_of
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.scoring.ray.pool import OrderedPool
from smserve.scoring.s3 import S3Object, parse
from smserve.scoring.scorer import RecordError, Scorer, build_service
from smserve.scoring.shards import Shard
from smserve.scoring.worker import ShardResult

logger = logging.getLogger(__name__)

# Ray CPUs reserved per scoring actor: half, so ``workers`` actors fit a cluster of as many CPUs
# with room left on the nodes for the actors Ray restarts there when another node dies.
ACTOR_CPUS = 0.5


def score_files_on_ray(
    files: Sequence[InputFile],
    settings: Settings,
    plan: Plan,
    run: Run,
    progress: Progress,
    address: str | None = None,
) -> Summary:
    """Score ``files`` on Ray; connects to ``address`` unless Ray is already initialised, and
    then disconnects (shutting down the cluster it started) before returning."""
    import ray

    if any(item.path is None for item in files):
        raise ConfigError("--engine ray reads files, folders or s3://, not - (standard input)")
    files, settings = [_absolute(item) for item in files], _absolute_paths(settings)
    connected = _connect(address)
    try:
        return _score(files, settings, plan, run, progress)
    finally:
        if connected:
            began = time.monotonic()
            # Here, not in Ray's exit hook, which first sleeps 0.5 s for its logs to print.
            ray.shutdown()
            logger.info("Ray shut down in %.2f s", time.monotonic() - began)


def _connect(address: str | None) -> bool:
    """Whether this call connected (or started a local cluster): False if Ray already was."""
    import ray

    if ray.is_initialized():
        return False
    began = time.monotonic()
    ray.init(address=address, include_dashboard=False, configure_logging=False)
    logger.info("Ray cluster ready in %.2f s", time.monotonic() - began)
    return True


def _absolute(item: InputFile) -> InputFile:
    """``item`` with its local paths absolute (S3 objects and standard input as they are)."""
    path = item.path.absolute() if isinstance(item.path, Path) else item.path
    output = item.output.absolute() if isinstance(item.output, Path) else item.output
    return dataclasses.replace(item, path=path, output=output)


def _absolute_paths(settings: Settings) -> Settings:
    """``settings`` with every path absolute (the model's above all), for actors elsewhere."""
    paths = {
        field.name: value.absolute()
        for field in dataclasses.fields(settings)
        if isinstance(value := getattr(settings, field.name), Path)
    }
    return settings.replace(**paths)


def _score(
    files: Sequence[InputFile], settings: Settings, plan: Plan, run: Run, progress: Progress
) -> Summary:
    out, nodes = Assembler(progress), Counter[str]()
    planned = [(s, list(shards_of(s, plan, run))) for f in files if (s := out.start(f, run))]
    answers = _answers([shard for _, shards in planned for shard in shards], settings, plan, run)
    try:
        with contextlib.closing(answers) as rows:  # its actors stopped, however this ends
            for state, shards in planned:
                _assemble(out, state, len(shards), rows, nodes)
    finally:
        out.abandon()
    if nodes:
        logger.info("Ray: %d shards answered on %s", nodes.total(), _describe(nodes))
    return out.summary


def _assemble(
    out: Assembler, state: OpenFile, n_shards: int, rows: Iterator[Any], nodes: Counter[str]
) -> None:
    for _ in range(n_shards):
        row = next(rows)
        nodes[str(row["node"])] += 1
        out.take(state, _result(row), io.BytesIO(row["body"]))
    out.close(state)


def _describe(nodes: Counter[str]) -> str:
    """``2 nodes (3f2a9c01: 7, 8be0d4c2: 5)``: each node by its id's first 8 hex digits."""
    counts = ", ".join(f"{node[:8]}: {count}" for node, count in sorted(nodes.items()))
    return f"{len(nodes)} node{'s' if len(nodes) > 1 else ''} ({counts})"


def _answers(
    shards: Sequence[Shard], settings: Settings, plan: Plan, run: Run
) -> Generator[Any, None, None]:
    """The shards' answers in order, from actors started for this job and stopped with it."""
    if not shards:
        return
    import ray

    began = time.monotonic()
    scorer = ray.remote(
        num_cpus=ACTOR_CPUS,
        max_restarts=-1,  # restarted on a node left when its own dies ...
        max_task_retries=-1,  # ... and sent its shards again
        scheduling_strategy="SPREAD",
    )(ShardScorer)
    actors: list[Any] = [
        scorer.remote(settings, plan, run) for _ in range(min(run.workers, len(shards)))
    ]
    items = [_item(shard) for shard in shards]
    logger.info("Ray: %d shards for %d actors, set up in %.2f s", len(items), len(actors),
                time.monotonic() - began)  # fmt: skip
    try:
        yield from _timed(iter(OrderedPool(ray, actors, items)))
    finally:
        for actor in actors:
            ray.kill(actor)


def _timed(rows: Iterator[Any]) -> Iterator[Any]:
    """``rows``, logging when the first answer came and when its actor had become ready."""
    began, wall = time.monotonic(), time.time()
    first = next(rows, None)
    if first is None:
        return
    logger.info(
        "Ray: the first actor ready after %.2f s, the first answer after %.2f s",
        float(first["ready"]) - wall, time.monotonic() - began,
    )  # fmt: skip
    yield first
    yield from rows


class ShardScorer:
    """An actor: one shard in (as a row), its answer bytes and counts out."""

    def __init__(self, settings: Settings, plan: Plan, run: Run) -> None:
        import ray

        worker.preload(settings)
        self.scorer, self.run = Scorer(build_service(settings), plan), run
        self.node = ray.get_runtime_context().get_node_id()
        self.ready = time.time()  # wall clock: compared with the driver's, for the log only

    def answer(self, row: dict[str, Any]) -> dict[str, Any]:
        body = io.BytesIO()
        result = worker.answer_shard(self.scorer, self.run, _shard(row), body.write)
        errors = [(e.record, e.message, e.at, e.length) for e in result.errors]
        return {
            "body": body.getvalue(), "records": result.n_records, "read": result.input_bytes,
            "errors": orjson.dumps(errors), "failed": result.failed,
            "failure": result.failure or "", "ready": self.ready, "node": self.node,
        }  # fmt: skip


def _item(shard: Shard) -> dict[str, Any]:
    source = shard.source
    endpoint = source.endpoint_url if isinstance(source, S3Object) else None
    stop = -1 if shard.stop is None else shard.stop
    return {"source": str(source), "start": shard.start, "stop": stop, "endpoint": endpoint}


def _shard(row: Mapping[str, Any]) -> Shard:
    name, stop = str(row["source"]), int(row["stop"])
    source = parse(name, row["endpoint"]) if name.startswith("s3://") else Path(name)
    return Shard(source, int(row["start"]), None if stop < 0 else stop)


def _result(row: Mapping[str, Any]) -> ShardResult:
    errors = tuple(RecordError(*error) for error in orjson.loads(row["errors"]))
    failure = str(row["failure"]) or None
    return ShardResult(int(row["records"]), int(row["read"]), errors, bool(row["failed"]), failure)
