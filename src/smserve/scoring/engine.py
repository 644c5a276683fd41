"""The local engine: the parent reads and splits the inputs and writes the answers in order;
``workers`` processes (each loading the model once) score the mini-batches.

Memory is bounded whatever the input size: the parent holds at most ``2 * workers`` mini-batches
in flight, each at most ``max_payload_bytes``, plus the one being read and their answers; each
worker holds one mini-batch and its decoded arrays. Ctrl-C cancels what is queued, lets the
workers finish the mini-batch in hand, deletes unfinished outputs and raises Interrupted."""

from __future__ import annotations

import logging
import multiprocessing
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import BinaryIO

from smserve.config import Settings
from smserve.errors import ServingError
from smserve.scoring import worker
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import EXIT_FILE_FAILED, EXIT_OK, EXIT_RECORDS_SKIPPED, Plan, Run
from smserve.scoring.output import Sink, open_sink
from smserve.scoring.progress import Progress
from smserve.scoring.scorer import Scored
from smserve.scoring.split import Chunk, chunks

logger = logging.getLogger(__name__)


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
    """One input being answered; ``failure`` set means its output is discarded."""

    item: InputFile
    sink: Sink
    failure: str | None = None
    skipped: int = 0


def score_files(
    files: Sequence[InputFile], settings: Settings, plan: Plan, run: Run, progress: Progress
) -> Summary:
    """Score ``files`` in order. Raises ClientError/StartupError before any output is
    written when the model or the plan is unusable, and Interrupted on Ctrl-C."""
    context = multiprocessing.get_context("spawn")  # no OpenMP or numpy state crosses a fork
    pool = ProcessPoolExecutor(
        run.workers, mp_context=context, initializer=worker.initialize, initargs=(settings, plan)
    )
    try:
        pool.submit(worker.describe).result()
        return _Writer(pool, plan, run, progress).write(files)
    except KeyboardInterrupt:
        raise Interrupted() from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Writer:
    def __init__(self, pool: ProcessPoolExecutor, plan: Plan, run: Run, progress: Progress) -> None:
        self.pool, self.plan, self.run, self.progress = pool, plan, run, progress
        self.summary = Summary()
        self.open: list[_File] = []

    def write(self, files: Sequence[InputFile]) -> Summary:
        window: deque[tuple[_File, Future[Scored] | None]] = deque()
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

    def _entries(self, files: Sequence[InputFile]) -> Iterator[tuple[_File, Future[Scored] | None]]:
        """Each mini-batch sent to a worker, then ``None`` once a file is read to its end."""
        for item in files:
            if self.run.skip_existing and item.output is not None and item.output.exists():
                self.summary.existing += 1
                continue
            state = _File(item, open_sink(item.output))
            self.open.append(state)
            for chunk in self._chunks(state):
                yield state, self.pool.submit(worker.score, chunk)
            yield state, None

    def _chunks(self, state: _File) -> Iterator[Chunk]:
        single = self.run.batch_strategy == "SingleRecord"
        try:
            with ExitStack() as stack:
                stream = _open(state.item, stack)
                for chunk in chunks(
                    stream, self.plan.split_type, self.run.max_payload_bytes, single
                ):
                    if state.failure is not None:
                        return  # the writer already failed this file: stop reading it
                    yield chunk
        except (ServingError, OSError) as exc:
            state.failure = state.failure or _message(exc)

    def _settle(self, state: _File, future: Future[Scored] | None) -> None:
        if future is None:
            self._close(state)
            return
        try:
            scored = future.result()
        except ServingError as exc:
            scored = Scored(b"", 0, 0, failed=True)
            state.failure = state.failure or exc.message
        self._take(state, scored)

    def _take(self, state: _File, scored: Scored) -> None:
        if state.failure is not None:
            return
        if scored.failed:
            error = scored.errors[0]
            state.failure = f"record {error.record}: {error.message}"
            return
        state.sink.write(scored.body)
        state.skipped += len(scored.errors)
        for error in scored.errors:
            logger.warning(
                "%s: record %d skipped: %s", state.item.relative, error.record, error.message
            )
        self.progress.advance(scored.n_records, scored.input_bytes)

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


def _open(item: InputFile, stack: ExitStack) -> BinaryIO:
    if item.path is None:
        return sys.stdin.buffer
    return stack.enter_context(item.path.open("rb"))


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ServingError) else f"cannot read it: {exc}"
