"""Shards answered by a few Ray actors, handed back in input order, with a bounded number of
answers held by the driver.

Each actor has up to ``QUEUED_PER_ACTOR`` shards sent to it at a time, so it never waits for
the driver between two shards; a shard goes to whichever actor answered one first (a slow or
restarted actor holds up only its own), and no shard is sent more than
``AHEAD_PER_ACTOR`` × actors past the one the driver writes next, which bounds the answers
waiting in the driver. The first shards are dealt to the actors in turn, so every actor gets
work however slowly the others start."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

QUEUED_PER_ACTOR = 2
AHEAD_PER_ACTOR = 4


class OrderedPool:
    """``answer.remote(item)`` on ``actors`` for every item; iterating yields the answers in
    the items' order. ``ray`` is the module whose ``wait`` and ``get`` settle the answers."""

    def __init__(self, ray: Any, actors: Sequence[Any], items: Sequence[Any]) -> None:
        self.ray, self.items = ray, items
        self.window = AHEAD_PER_ACTOR * len(actors)
        self.free = deque(actor for _ in range(QUEUED_PER_ACTOR) for actor in actors)
        self.running: dict[Any, tuple[int, Any]] = {}  # ObjectRef -> (item index, actor)
        self.answered: dict[int, Any] = {}
        self.sent = self.written = 0

    def __iter__(self) -> Iterator[Any]:
        while self.written < len(self.items):
            self._send()
            while self.written not in self.answered:
                self._collect()
            yield self.answered.pop(self.written)
            self.written += 1

    def _send(self) -> None:
        limit = min(len(self.items), self.written + self.window)
        while self.free and self.sent < limit:
            actor = self.free.popleft()
            self.running[actor.answer.remote(self.items[self.sent])] = (self.sent, actor)
            self.sent += 1

    def _collect(self) -> None:
        """Waits for one answer at least, takes every one ready, and sends more shards."""
        ready, _ = self.ray.wait(list(self.running), num_returns=1)
        for ref in ready:
            index, actor = self.running.pop(ref)
            self.answered[index] = self.ray.get(ref)
            self.free.append(actor)
        self._send()
