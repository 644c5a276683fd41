"""OrderedPool with stand-in actors (no Ray): answers in input order, every actor dealt work
first, each shard to whichever actor is free, and never more than the window ahead of the
answer written next. The real cluster runs it in ``test_ray_cluster``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from smserve.scoring.ray.pool import AHEAD_PER_ACTOR, QUEUED_PER_ACTOR, OrderedPool


class Ref:
    def __init__(self, actor: Actor, item: int) -> None:
        self.actor, self.item = actor, item


class Actor:
    """Answers its queue front to back; ``speed`` answers per wait (0: never answers)."""

    def __init__(self, name: str, speed: int, log: list[tuple[str, int]]) -> None:
        self.name, self.speed, self.log, self.queue = name, speed, log, list[Ref]()
        self.answer = self  # ``actor.answer.remote(item)`` as on a Ray actor handle

    def remote(self, item: int) -> Ref:
        self.log.append((self.name, item))
        self.queue.append(Ref(self, item))
        return self.queue[-1]


class Stalled(Exception):
    """Every queued shard is an unanswering actor's: the pool would wait forever."""


class FakeRay:
    """``wait`` answers, for each actor, as many of its oldest queued shards as its speed, and
    raises Stalled where none would ever come."""

    def __init__(self, actors: Sequence[Actor]) -> None:
        self.actors, self.most_running = actors, 0

    def wait(self, refs: list[Ref], num_returns: int) -> tuple[list[Ref], list[Ref]]:
        self.most_running = max(self.most_running, len(refs))
        ready = [ref for actor in self.actors for ref in actor.queue[: actor.speed]]
        for actor in self.actors:
            del actor.queue[: actor.speed]
        if len(ready) < num_returns:
            raise Stalled
        assert all(ref in refs for ref in ready)
        return ready, [ref for ref in refs if ref not in ready]

    def get(self, ref: Ref) -> Any:
        return f"answer {ref.item} by {ref.actor.name}"


def _pool(
    speeds: Sequence[int], n_items: int
) -> tuple[OrderedPool, list[tuple[str, int]], FakeRay]:
    log: list[tuple[str, int]] = []
    actors = [Actor(f"a{i}", speed, log) for i, speed in enumerate(speeds)]
    fake = FakeRay(actors)
    return OrderedPool(fake, actors, list(range(n_items))), log, fake


def test_answers_come_in_input_order_and_every_item_is_sent_once() -> None:
    pool, log, _ = _pool([1, 3], 40)
    answers = list(pool)
    assert [int(a.split()[1]) for a in answers] == list(range(40))
    assert sorted(item for _, item in log) == list(range(40))


def test_the_first_items_are_dealt_to_every_actor_in_turn() -> None:
    pool, log, _ = _pool([1, 1, 1], 30)
    next(iter(pool))
    first = log[: 3 * QUEUED_PER_ACTOR]
    assert [name for name, _ in first] == ["a0", "a1", "a2"] * QUEUED_PER_ACTOR


def test_a_faster_actor_answers_more_and_a_stalled_one_holds_up_only_its_own() -> None:
    pool, log, _ = _pool([3, 1], 60)
    list(pool)
    by_actor = {name: sum(1 for n, _ in log if n == name) for name in ("a0", "a1")}
    assert by_actor["a0"] > by_actor["a1"] > 0


def test_nothing_is_sent_past_the_window_ahead_of_the_next_answer() -> None:
    """a1 never answers its first item: a0 goes on up to the window past it, then waits."""
    pool, log, fake = _pool([2, 0], 100)
    answers = iter(pool)
    assert next(answers) == "answer 0 by a0"
    with pytest.raises(Stalled):
        next(answers)
    window = AHEAD_PER_ACTOR * 2
    assert max(item for _, item in log) == 1 + window - 1  # item 1 is the one written next
    assert fake.most_running <= QUEUED_PER_ACTOR * 2
    assert sorted(pool.answered) == [2, 4, 5, 6, 7, 8]  # a1 holds 1 and 3, dealt to it first
