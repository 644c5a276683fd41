"""The local engine: the parent plans shards (``shards``) and writes the answers in order;
``workers`` processes (each loading the model once) read, score and write whole shards, so no
input byte passes through the parent, except from standard input.

Memory is bounded whatever the input size: a worker holds one shard (``SHARD_MINI_BATCHES``
mini-batches of at most ``max_payload_bytes``), one mini-batch and its decoded arrays; the
parent holds one copy buffer, and for standard input at most ``2 * workers`` mini-batches in
flight. On disk, at most ``2 * workers + 1`` shards' answers wait in part files. Ctrl-C cancels
what is queued, lets the workers finish the shard in hand, deletes unfinished outputs and
raises Interrupted."""

from __future__ import annotations

import multiprocessing
import shutil
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.context import BaseContext
from pathlib import Path

from smserve.algorithms.catalog import ALGORITHMS
from smserve.config import Settings
from smserve.scoring import worker
from smserve.scoring.assemble import Assembler, OpenFile, Summary, shards_of
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.scoring.s3 import S3Object
from smserve.scoring.worker import ShardResult

__all__ = ["Interrupted", "Summary", "score_files"]


class Interrupted(Exception):
    """The run was stopped by Ctrl-C; finished outputs stay, unfinished ones are gone."""


Pending = tuple[OpenFile, "Future[ShardResult] | None", Path | None]


def score_files(
    files: Sequence[InputFile], settings: Settings, plan: Plan, run: Run, progress: Progress
) -> Summary:
    """Score ``files`` in order. Raises ClientError/StartupError before any output is
    written when the model or the plan is unusable, and Interrupted on Ctrl-C."""
    pool = ProcessPoolExecutor(
        run.workers, mp_context=_context(files, settings), initializer=worker.initialize,
        initargs=(settings, plan, run),
    )  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix="smserve-score-"))
    try:
        pool.submit(worker.describe).result()
        return _Writer(pool, plan, run, Assembler(progress), scratch).write(files)
    except KeyboardInterrupt:
        raise Interrupted() from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _context(files: Sequence[InputFile], settings: Settings) -> BaseContext:
    """Fork when that is safe, so workers start with the imports done (XGBoost's included,
    OpenMP not started: the model is loaded after the fork); spawn otherwise."""
    if not _may_fork(files):
        return multiprocessing.get_context("spawn")
    worker.preload(settings)
    return multiprocessing.get_context("fork")


def _may_fork(files: Sequence[InputFile]) -> bool:
    """Not after an algorithm's library that may have started threads was imported by someone
    else (XGBoost's OpenMP threads do not survive a fork: the children hang); nor with other
    threads (their locks), nor for S3 inputs or outputs (the AWS SDK's threads and
    connections)."""
    if "fork" not in multiprocessing.get_all_start_methods() or _fork_unsafe_imported():
        return False
    return threading.active_count() == 1 and not any(_in_s3(item) for item in files)


def _fork_unsafe_imported() -> bool:
    return any(name in sys.modules for spec in ALGORITHMS for name in spec.fork_unsafe_modules)


def _in_s3(item: InputFile) -> bool:
    return isinstance(item.path, S3Object) or isinstance(item.output, S3Object)


class _Writer:
    """Sends shards to the pool and hands their answers to the assembler in order, with at
    most ``run.in_flight`` shards ahead of the one being written."""

    def __init__(
        self, pool: ProcessPoolExecutor, plan: Plan, run: Run, out: Assembler, scratch: Path
    ) -> None:
        self.pool, self.plan, self.run, self.out = pool, plan, run, out
        self.scratch, self.parts = scratch, 0

    def write(self, files: Sequence[InputFile]) -> Summary:
        window: deque[Pending] = deque()
        try:
            for entry in self._entries(files):
                window.append(entry)
                while len(window) > self.run.in_flight:
                    self._settle(*window.popleft())
            while window:
                self._settle(*window.popleft())
        finally:
            self.out.abandon()
        return self.out.summary

    def _entries(self, files: Sequence[InputFile]) -> Iterator[Pending]:
        """Each shard sent to a worker, then ``None`` once a file is planned to its end."""
        for item in files:
            state = self.out.start(item, self.run)
            if state is None:
                continue
            for shard in shards_of(state, self.plan, self.run):
                self.parts += 1
                part = self.scratch / f"{self.parts}.part"
                yield state, self.pool.submit(worker.score_shard, shard, str(part)), part
            yield state, None, None

    def _settle(
        self, state: OpenFile, future: Future[ShardResult] | None, part: Path | None
    ) -> None:
        if future is None or part is None:
            self.out.close(state)
            return
        result = future.result()
        try:
            with part.open("rb") as answers:
                self.out.take(state, result, answers)
        finally:
            part.unlink(missing_ok=True)
