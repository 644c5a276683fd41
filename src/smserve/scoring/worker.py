"""The worker side of the engines: each process (or Ray actor) loads the model once and then
answers shards, reading each shard's bytes itself and writing its answers to a part file (or,
on Ray, returning them).

A process pool calls module-level functions, so the loaded Scorer lives in ``_STATE``, one per
process (as the built-in XGBoost container loads one booster per gunicorn worker)."""

from __future__ import annotations

import io
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from smserve.algorithms.catalog import ALGORITHMS, spec_for
from smserve.config import Settings
from smserve.errors import ClientError, ServingError, StartupError
from smserve.scoring.options import Plan, Run
from smserve.scoring.s3 import S3Object
from smserve.scoring.scorer import RecordError, Scorer, build_service
from smserve.scoring.shards import Shard
from smserve.scoring.split import chunks

_STATE: dict[str, tuple[Scorer, Run] | Exception] = {}


@dataclass(frozen=True, slots=True)
class ShardResult:
    """What a shard gave: records numbered from the shard's first (the engine adds the count
    before it). ``failed``: the file fails at ``errors[0]``; ``failure``: the shard could not
    be read or split, and says why."""

    n_records: int = 0
    input_bytes: int = 0
    errors: tuple[RecordError, ...] = ()
    failed: bool = False
    failure: str | None = None


def preload(settings: Settings) -> None:
    """Imports done once in the parent before it forks the workers: the named algorithm's, or
    every algorithm's when the model files will tell."""
    chosen = ALGORITHMS if settings.algorithm is None else (spec_for(settings.algorithm),)
    for spec in chosen:
        spec.import_lean()


def initialize(settings: Settings, plan: Plan, run: Run) -> None:
    """Load the model. A failure is kept and raised by ``describe``: an exception raised
    here would only break the pool, without its message."""
    # Ctrl-C reaches the whole process group; the parent alone decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preload(settings)  # nothing left to do after a fork
    try:
        _STATE["scorer"] = (Scorer(build_service(settings), plan), run)
    except (StartupError, ClientError) as exc:
        _STATE["scorer"] = exc


def describe() -> tuple[str, str]:
    """``(input type, output type)`` of this worker's plan; raises what ``initialize`` hit."""
    scorer, _ = _loaded()
    return scorer.input_type, scorer.output_type


def score_shard(shard: Shard, part: str) -> ShardResult:
    """Answers ``shard`` into the file ``part``."""
    scorer, run = _loaded()
    with open(part, "wb") as sink:
        return answer_shard(scorer, run, shard, sink.write)


def answer_shard(
    scorer: Scorer, run: Run, shard: Shard, write: Callable[[bytes], object]
) -> ShardResult:
    """Split ``shard`` into mini-batches as ``split.chunks`` does and ``write`` each answer."""
    single = run.batch_strategy == "SingleRecord"
    records = read = written = 0
    errors: list[RecordError] = []
    try:
        with _opened(shard) as stream:
            for chunk in chunks(stream, scorer.plan.split_type, run.max_payload_bytes, single):
                scored = scorer.score(chunk)
                if scored.failed:
                    return ShardResult(records, read, scored.errors[:1], failed=True)
                errors += (replace(e, at=e.at + written) for e in scored.errors)
                write(scored.body)
                records, read = records + scored.n_records, read + scored.input_bytes
                written += len(scored.body)
    except (ServingError, OSError) as exc:
        return ShardResult(failure=_message(exc))
    return ShardResult(records, read, tuple(errors))


@contextmanager
def _opened(shard: Shard) -> Iterator[BinaryIO]:
    if shard.body is not None:
        yield io.BytesIO(shard.body)
    elif isinstance(shard.source, S3Object):
        with shard.source.open_input() as stream:
            yield stream
    else:
        assert isinstance(shard.source, Path)
        with shard.source.open("rb") as file:
            if shard.stop is None:
                yield file
                return
            file.seek(shard.start)  # at most SHARD_MINI_BATCHES mini-batches held
            yield io.BytesIO(file.read(shard.stop - shard.start))


def _loaded() -> tuple[Scorer, Run]:
    state = _STATE["scorer"]
    if isinstance(state, Exception):
        raise state
    return state


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ServingError) else f"cannot read it: {exc}"
