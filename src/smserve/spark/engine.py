"""``smserve score --engine spark``: the same files, the same answers as the local engine,
scored on a Spark cluster (``--address``, a master URL; default ``local[--workers]``).

The driver plans the local engine's shards (``smserve.scoring.shards``: runs of whole
mini-batches of one file, so a big file is many tasks) and sends them to Spark a window at a
time: a window is one job of one task per shard (``range`` with one partition per shard, then
``mapInArrow``), as many shards as the cluster has cores. Each task reads its shard itself,
from a path every executor sees or from ``s3://``, and answers it with the local engine's
worker code, the Python worker process keeping the model loaded between tasks (``loaded``).
The answers come back to the driver (``toArrow``), which writes them in input order through
the local engine's assembler, each file atomically.

Two windows are in flight: while the driver waits for one, the next one's tasks are queued,
so a core freed by a short shard takes the next one at once. Driver memory is at most three
windows of answers (one being written); planning runs ahead of writing by as much, so only
the files in those windows are open. Standard input is refused."""

from __future__ import annotations

import functools
import io
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa  # type: ignore[import-untyped]

from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.scoring import worker
from smserve.scoring.assemble import Assembler, OpenFile, Summary, shards_of
from smserve.scoring.engine import Interrupted
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.scoring.scorer import RecordError, Scorer
from smserve.scoring.shards import Shard
from smserve.scoring.worker import ShardResult
from smserve.spark.loaded import scorer_for
from smserve.spark.session import close_session, open_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

WINDOWS_IN_FLIGHT = 2
CANCEL_BOUND_S = 60.0  # how long an interrupted run waits for Spark to end its jobs
CANCEL_POLL_S = 0.05
ANSWER_SCHEMA = (
    "body binary, records long, read long, errors string, failed boolean, failure string"
)
Entry = tuple[OpenFile, Shard | None]  # a shard of a file, or None: the file is planned whole
Row = dict[str, Any]  # a shard's answer, as ``answer_shards`` made it ({} for None)
Answered = tuple[OpenFile, Shard | None, Row]
Send = Callable[[list[Shard]], "Future[list[Row]]"]


@dataclass(frozen=True, slots=True)
class Job:
    """What every task needs besides its shards (pickled into each task)."""

    settings: Settings
    plan: Plan
    run: Run


def score_files_on_spark(
    files: Sequence[InputFile],
    settings: Settings,
    plan: Plan,
    run: Run,
    progress: Progress,
    master: str | None = None,
    environ: MutableMapping[str, str] | None = None,
) -> Summary:
    """Score ``files`` on Spark: the caller's active session, else one started for
    ``master`` and stopped before returning. Raises ClientError/StartupError before any
    output is written when the model or the plan is unusable, Interrupted on Ctrl-C."""
    if any(item.path is None for item in files):
        raise ConfigError("--engine spark reads files, folders or s3://, not - (standard input)")
    # Executors work in folders of their own: every path they get must be absolute.
    job = Job(settings.replace(model_dir=settings.model_dir.absolute()), plan, run)
    scorer_for(job.settings, plan)  # the model and the plan, checked before Spark starts
    session, started = open_session(master, run.workers, {} if environ is None else environ)
    try:
        return _score(session, files, job, progress)
    finally:
        if started:
            close_session(session)


def _score(
    session: SparkSession, files: Sequence[InputFile], job: Job, progress: Progress
) -> Summary:
    out = Assembler(progress)
    size = max(1, session.sparkContext.defaultParallelism)
    try:
        with _Jobs(session, job) as jobs:
            _write(out, _in_order(_windows(_entries(out, files, job), size), jobs.send))
    finally:
        out.abandon()
    return out.summary


class _Jobs:
    """Runs windows as Spark jobs from ``WINDOWS_IN_FLIGHT`` threads, in a job group of
    their own, so that Ctrl-C cancels this run's jobs alone (a caller's session may run
    others), and returns once none of them runs; it then raises Interrupted."""

    def __init__(self, session: SparkSession, job: Job) -> None:
        self.session, self.job = session, job
        self.group = f"smserve-score-{uuid.uuid4().hex}"
        self.pool = ThreadPoolExecutor(WINDOWS_IN_FLIGHT, thread_name_prefix="smserve-spark")

    def send(self, shards: list[Shard]) -> Future[list[Row]]:
        return self.pool.submit(_answers, self.session, self.job, self.group, shards)

    def __enter__(self) -> _Jobs:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.pool.shutdown(wait=True)
            return
        self._cancel()  # nothing will read the answers of the jobs in flight
        if issubclass(kind, KeyboardInterrupt):
            raise Interrupted() from None

    def _cancel(self) -> None:
        """Cancels the group until its threads have returned and Spark reports none of its
        jobs running (within CANCEL_BOUND_S): a thread may start a job just after a cancel,
        and Spark reports a job's end a moment after the job ends."""
        stopping = threading.Thread(target=self.pool.shutdown, kwargs={"cancel_futures": True})
        stopping.start()
        deadline = time.monotonic() + CANCEL_BOUND_S
        while (stopping.is_alive() or self._running()) and time.monotonic() < deadline:
            self.session.sparkContext.cancelJobGroup(self.group)
            time.sleep(CANCEL_POLL_S)
        if stopping.is_alive() or self._running():
            logger.warning("Spark jobs of group %s still running after %.0f s of cancelling",
                           self.group, CANCEL_BOUND_S)  # fmt: skip

    def _running(self) -> bool:
        tracker = self.session.sparkContext.statusTracker()
        return bool(set(tracker.getJobIdsForGroup(self.group)) & set(tracker.getActiveJobsIds()))


def _write(out: Assembler, answered: Iterator[Answered]) -> None:
    for state, shard, answer in answered:
        if shard is None:
            out.close(state)
        else:
            out.take(state, _result(answer), io.BytesIO(answer["body"]))


def _entries(out: Assembler, files: Sequence[InputFile], job: Job) -> Iterator[Entry]:
    for item in files:
        state = out.start(item, job.run)
        if state is None:
            continue
        for shard in shards_of(state, job.plan, job.run):
            yield state, shard
        yield state, None


def _windows(entries: Iterable[Entry], size: int) -> Iterator[list[Entry]]:
    """Consecutive entries holding ``size`` shards each (the last one fewer)."""
    window: list[Entry] = []
    shards = 0
    for entry in entries:
        window.append(entry)
        shards += entry[1] is not None
        if shards == size:
            yield window
            window, shards = [], 0
    if window:
        yield window


def _in_order(windows: Iterable[list[Entry]], send: Send) -> Iterator[Answered]:
    """Each entry with its answer, in order; ``WINDOWS_IN_FLIGHT`` windows sent ahead."""
    sent: deque[tuple[list[Entry], Future[list[Row]]]] = deque()
    for window in windows:
        sent.append((window, send([shard for _, shard in window if shard is not None])))
        if len(sent) > WINDOWS_IN_FLIGHT:
            yield from _settled(*sent.popleft())
    while sent:
        yield from _settled(*sent.popleft())


def _settled(window: list[Entry], future: Future[list[Row]]) -> Iterator[Answered]:
    answers = iter(future.result())
    for state, shard in window:
        yield state, shard, {} if shard is None else next(answers)


def _answers(session: SparkSession, job: Job, group: str, shards: list[Shard]) -> list[Row]:
    """One Spark job: a task per shard, the answers in shard order."""
    if not shards:
        return []
    session.sparkContext.setJobGroup(group, "smserve score", interruptOnCancel=True)
    located = tuple(_absolute(shard) for shard in shards)
    frame = session.range(0, len(located), 1, len(located))  # one row, one task per shard
    scored = frame.mapInArrow(functools.partial(answer_shards, job, located), ANSWER_SCHEMA)
    rows: list[Row] = scored.toArrow().to_pylist()
    return rows


def answer_shards(job: Job, shards: tuple[Shard, ...], batches: Iterator[Any]) -> Iterator[Any]:
    """The function each task runs: shard numbers in, one answer row per shard out."""
    scorer = scorer_for(job.settings, job.plan)
    for batch in batches:
        rows = [_answer(scorer, job.run, shards[index]) for index in batch.column(0).to_pylist()]
        yield pa.RecordBatch.from_pylist(rows, schema=_arrow_answer_schema())


def _answer(scorer: Scorer, run: Run, shard: Shard) -> Row:
    body = io.BytesIO()
    result = worker.answer_shard(scorer, run, shard, body.write)
    errors = [(e.record, e.message, e.at, e.length) for e in result.errors]
    return {
        "body": body.getvalue(), "records": result.n_records, "read": result.input_bytes,
        "errors": orjson.dumps(errors).decode(), "failed": result.failed,
        "failure": result.failure or "",
    }  # fmt: skip


@functools.cache
def _arrow_answer_schema() -> Any:
    """ANSWER_SCHEMA in Arrow's terms (built in the worker, where Spark's parser is not)."""
    kinds = {"binary": pa.binary(), "long": pa.int64(), "string": pa.string(),
             "boolean": pa.bool_()}  # fmt: skip
    pairs = (column.split() for column in ANSWER_SCHEMA.split(","))
    return pa.schema([(name, kinds[kind]) for name, kind in pairs])


def _absolute(shard: Shard) -> Shard:
    if isinstance(shard.source, Path):
        return Shard(shard.source.absolute(), shard.start, shard.stop, shard.body)
    return shard


def _result(row: Row) -> ShardResult:
    errors = tuple(RecordError(*error) for error in orjson.loads(row["errors"]))
    failure = str(row["failure"]) or None
    return ShardResult(int(row["records"]), int(row["read"]), errors, bool(row["failed"]), failure)
