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

import logging
import multiprocessing
import shutil
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import BinaryIO

from smserve.config import Settings
from smserve.errors import ServingError
from smserve.scoring import worker
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import EXIT_FILE_FAILED, EXIT_OK, EXIT_RECORDS_SKIPPED, Plan, Run
from smserve.scoring.output import Sink, open_sink
from smserve.scoring.progress import Progress
from smserve.scoring.s3 import S3Object
from smserve.scoring.scorer import RecordError
from smserve.scoring.shards import Shard, plan
from smserve.scoring.worker import ShardResult

logger = logging.getLogger(__name__)
COPY_BYTES = 1024 * 1024


class Interrupted(Exception):
    """The run was stopped by Ctrl-C; finished outputs stay, unfinished ones are gone."""


@dataclass
class Summary:
    scored: int = 0
    failed: int = 0
    existing: int = 0
    skipped_records: int = 0

    @property
    def exit_status(self) -> int:
        if self.failed:
            return EXIT_FILE_FAILED
        return EXIT_RECORDS_SKIPPED if self.skipped_records else EXIT_OK

    def describe(self) -> str:
        return (
            f"{self.scored} files scored, {self.failed} failed, {self.existing} already done "
            f"(--skip-existing), {self.skipped_records} records skipped"
        )


@dataclass
class _File:
    """One input being answered; ``failure`` set means its output is discarded. ``records``
    counts the records of the shards written so far, which numbers the next shard's."""

    item: InputFile
    sink: Sink
    failure: str | None = None
    skipped: int = 0
    records: int = 0


Pending = tuple[_File, "Future[ShardResult] | None", Path | None]


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
        return _Writer(pool, plan, run, progress, scratch).write(files)
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
    """Not after XGBoost was imported by someone else: it may have run OpenMP, whose threads
    do not survive a fork (the children hang); nor with other threads (their locks), nor for
    S3 inputs or outputs (the AWS SDK's threads and connections)."""
    if "fork" not in multiprocessing.get_all_start_methods() or "xgboost" in sys.modules:
        return False
    return threading.active_count() == 1 and not any(_in_s3(item) for item in files)


def _in_s3(item: InputFile) -> bool:
    return isinstance(item.path, S3Object) or isinstance(item.output, S3Object)


class _Writer:
    def __init__(
        self, pool: ProcessPoolExecutor, plan: Plan, run: Run, progress: Progress, scratch: Path
    ) -> None:
        self.pool, self.plan, self.run, self.progress = pool, plan, run, progress
        self.scratch, self.parts = scratch, 0
        self.summary = Summary()
        self.open: list[_File] = []

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
            for unfinished in self.open:
                unfinished.sink.discard()
        return self.summary

    def _entries(self, files: Sequence[InputFile]) -> Iterator[Pending]:
        """Each shard sent to a worker, then ``None`` once a file is planned to its end."""
        for item in files:
            if self.run.skip_existing and item.output is not None and item.output.exists():
                self.summary.existing += 1
                continue
            state = _File(item, open_sink(item.output))
            self.open.append(state)
            for shard in self._shards(state):
                self.parts += 1
                part = self.scratch / f"{self.parts}.part"
                yield state, self.pool.submit(worker.score_shard, shard, str(part)), part
            yield state, None, None

    def _shards(self, state: _File) -> Iterator[Shard]:
        single = self.run.batch_strategy == "SingleRecord"
        try:
            for shard in plan(state.item, self.plan.split_type, self.run.max_payload_bytes, single):
                if state.failure is not None:
                    return  # the writer already failed this file: stop planning it
                yield shard
        except (ServingError, OSError) as exc:
            state.failure = state.failure or _message(exc)

    def _settle(self, state: _File, future: Future[ShardResult] | None, part: Path | None) -> None:
        if future is None or part is None:
            self._close(state)
            return
        result = future.result()
        try:
            if state.failure is None:
                self._take(state, result, part)
        finally:
            part.unlink(missing_ok=True)

    def _take(self, state: _File, result: ShardResult, part: Path) -> None:
        if result.failure is not None:
            state.failure = result.failure
            return
        if result.failed:
            error = result.errors[0]
            state.failure = f"record {state.records + error.record}: {error.message}"
            return
        errors = [_renumbered(e, state.records) for e in result.errors]
        with part.open("rb") as answers:
            _copy(answers, state.sink, result.errors, errors)
        state.records += result.n_records
        state.skipped += len(errors)
        for error in errors:
            logger.warning(
                "%s: record %d skipped: %s", state.item.relative, error.record, error.message
            )
        self.progress.advance(result.n_records, result.input_bytes)

    def _close(self, state: _File) -> None:
        self.open.remove(state)
        if state.failure is None:
            state.sink.commit()
            self.summary.scored += 1
            self.summary.skipped_records += state.skipped
        else:
            state.sink.discard()
            self.summary.failed += 1
            logger.error("%s: failed, no output written: %s", state.item.relative, state.failure)


def _renumbered(error: RecordError, before: int) -> RecordError:
    return RecordError(error.record + before, error.message, error.at, error.length)


def _copy(
    answers: BinaryIO, sink: Sink, written: Sequence[RecordError], errors: Sequence[RecordError]
) -> None:
    """The part file to ``sink``, each error line ``written`` by the worker (numbered from
    its shard) replaced by the renumbered one."""
    at = 0
    for old, new in zip(written, errors, strict=True):
        _copy_bytes(answers, sink, old.at - at)
        if old.length:
            answers.seek(old.length, 1)
            sink.write(new.line())
        at = old.at + old.length
    _copy_bytes(answers, sink, None)


def _copy_bytes(answers: BinaryIO, sink: Sink, size: int | None) -> None:
    while size is None or size > 0:
        piece = answers.read(COPY_BYTES if size is None else min(COPY_BYTES, size))
        if not piece:
            return
        sink.write(piece)
        size = None if size is None else size - len(piece)


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ServingError) else f"cannot read it: {exc}"
