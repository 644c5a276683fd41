"""Assembling answers, for both engines: each input's shards' answers are written to its
sink in order, records numbered across shards, and the file committed or discarded whole.
It schedules nothing; ``engine`` (processes) and ``smserve.scoring.ray.engine`` feed it in order."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from smserve.errors import ServingError
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import EXIT_FILE_FAILED, EXIT_OK, EXIT_RECORDS_SKIPPED, Plan, Run
from smserve.scoring.output import Sink, open_sink
from smserve.scoring.progress import Progress
from smserve.scoring.scorer import RecordError
from smserve.scoring.shards import Shard, plan
from smserve.scoring.worker import ShardResult

logger = logging.getLogger(__name__)
COPY_BYTES = 1024 * 1024


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
class OpenFile:
    """One input being answered; ``failure`` set means its output is discarded. ``records``
    counts the records of the shards written so far, which numbers the next shard's."""

    item: InputFile
    sink: Sink
    failure: str | None = None
    skipped: int = 0
    records: int = 0


class Assembler:
    """Opens, fills and closes outputs; ``summary`` counts what happened to each file."""

    def __init__(self, progress: Progress, summary: Summary | None = None) -> None:
        self.progress, self.summary = progress, summary or Summary()
        self.open: list[OpenFile] = []

    def start(self, item: InputFile, run: Run) -> OpenFile | None:
        """The file's state, or None when ``--skip-existing`` finds its output done."""
        if run.skip_existing and item.output is not None and item.output.exists():
            self.summary.existing += 1
            return None
        state = OpenFile(item, open_sink(item.output))
        self.open.append(state)
        return state

    def take(self, state: OpenFile, result: ShardResult, answers: BinaryIO) -> None:
        """The next shard of ``state``'s file: ``answers`` as its worker wrote them."""
        if state.failure is not None:
            return
        if result.failure is not None or result.failed:
            state.failure = result.failure or _at(result.errors[0], state.records)
            return
        errors = [_renumbered(e, state.records) for e in result.errors]
        _copy(answers, state.sink, result.errors, errors)
        state.records += result.n_records
        state.skipped += len(errors)
        for error in errors:
            logger.warning(
                "%s: record %d skipped: %s", state.item.relative, error.record, error.message
            )
        self.progress.advance(result.n_records, result.input_bytes)

    def close(self, state: OpenFile) -> None:
        self.open.remove(state)
        if state.failure is None:
            state.sink.commit()
            self.summary.scored += 1
            self.summary.skipped_records += state.skipped
        else:
            state.sink.discard()
            self.summary.failed += 1
            logger.error("%s: failed, no output written: %s", state.item.relative, state.failure)

    def abandon(self) -> None:
        """Discards every unfinished output (an interrupted or broken run)."""
        for unfinished in self.open:
            unfinished.sink.discard()
        self.open.clear()


def shards_of(state: OpenFile, plan_: Plan, run: Run) -> Iterator[Shard]:
    """The file's shards; planning stops once the file failed, and a planning error (a
    record over the limit, an unreadable file) fails it."""
    single = run.batch_strategy == "SingleRecord"
    try:
        for shard in plan(state.item, plan_.split_type, run.max_payload_bytes, single):
            if state.failure is not None:
                return
            yield shard
    except (ServingError, OSError) as exc:
        state.failure = state.failure or _message(exc)


def _at(error: RecordError, before: int) -> str:
    return f"record {before + error.record}: {error.message}"


def _renumbered(error: RecordError, before: int) -> RecordError:
    return RecordError(error.record + before, error.message, error.at, error.length)


def _copy(
    answers: BinaryIO, sink: Sink, written: Sequence[RecordError], errors: Sequence[RecordError]
) -> None:
    """``answers`` to ``sink``, each error line ``written`` by the worker (numbered from its
    shard) replaced by the renumbered one."""
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
