"""Shards: the local engine's unit of work, a run of consecutive whole mini-batches of one
input that a worker reads, scores and writes by itself, so input bytes never pass through the
parent.

* A local file split by ``Line`` is cut into shards of about ``SHARD_MINI_BATCHES``
  mini-batches at exactly the cuts ``split.chunks`` makes from the start of the file (the last
  newline under ``max_payload_bytes``), so a worker re-splitting its shard gets the mini-batches
  the whole file would give. The cuts are found with ``rfind`` on a memory map, which touches a
  page or two per mini-batch instead of reading the file.
* Any other local file (RecordIO, ``None``) and every S3 object is one shard, streamed.
* Standard input cannot be read twice: the parent reads it, and each mini-batch is a shard that
  carries its bytes.

Record numbers are not counted here (that would read every byte): a worker numbers records
from its shard's start and the parent, which settles shards in order, adds the count before."""

from __future__ import annotations

import mmap
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from smserve.scoring.inputs import InputFile, Location
from smserve.scoring.split import chunks, too_large

SHARD_MINI_BATCHES = 4  # enough to amortise a task; small enough to even out the last ones


@dataclass(frozen=True, slots=True)
class Shard:
    """Bytes ``start`` to ``stop`` of ``source`` (``stop`` None: to its end, streamed), or
    ``body`` when the parent read the bytes itself (standard input)."""

    source: Location | None
    start: int = 0
    stop: int | None = None
    body: bytes | None = None


def plan(
    item: InputFile, split_type: str, max_payload_bytes: int, single: bool = False
) -> Iterator[Shard]:
    """The shards of ``item`` in order; raises RecordTooLarge for a line over the limit."""
    if item.path is None:
        stream = sys.stdin.buffer
        return (
            Shard(None, body=c.body) for c in chunks(stream, split_type, max_payload_bytes, single)
        )
    if split_type == "Line" and isinstance(item.path, Path):
        return _line_shards(item.path, max_payload_bytes)
    return iter([Shard(item.path)])


def _line_shards(path: Path, max_payload_bytes: int) -> Iterator[Shard]:
    with path.open("rb") as file:
        if file.seek(0, 2) == 0:
            return  # an empty file has no mini-batch (and cannot be mapped)
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
            start = at = batches = 0
            while at < len(view):
                at, batches = _cut(view, at, max_payload_bytes), batches + 1
                if batches == SHARD_MINI_BATCHES or at == len(view):
                    yield Shard(path, start, at)
                    start, batches = at, 0


def _cut(view: mmap.mmap, at: int, max_payload_bytes: int) -> int:
    """Where the mini-batch starting at ``at`` ends, as ``split._line_chunks`` cuts it."""
    if len(view) - at < max_payload_bytes:
        return len(view)
    cut = view.rfind(b"\n", at, at + max_payload_bytes) + 1
    if cut == 0:  # rare: count the lines before it to name the record
        raise too_large(view[:at].count(b"\n") + 1, at, max_payload_bytes)
    return cut
