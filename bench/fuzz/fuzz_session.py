"""fuzz.py's client side: one keep-alive connection per client (``Session``), reopened only
after the server said it closes, and the ``Tally`` of what its answers broke."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from bench.fuzz import fuzz_requests as kinds
from bench.fuzz.wire import Answer, Dropped, Truncated, Wire

ANSWER_TIMEOUT_S = 30.0
EXAMPLES = 5


@dataclass
class Tally:
    """What one client saw; merged at the end."""

    by_status: Counter[int] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    requests: int = 0
    connections: int = 0
    dropped_as_allowed: int = 0

    def fail(self, what: str, example: str, variant: str = "") -> None:
        """Count a breach of ``what``; examples are kept per ``variant`` (say, each status)."""
        self.failures[what] += 1
        examples = self.examples.setdefault(f"{what}{variant}", [])
        if len(examples) < EXAMPLES:
            examples.append(example)

    def merge(self, other: Tally) -> None:
        for name in ("by_status", "by_kind", "failures"):
            getattr(self, name).update(getattr(other, name))
        for what, examples in other.examples.items():
            self.examples.setdefault(what, []).extend(examples)
        self.requests += other.requests
        self.connections += other.connections
        self.dropped_as_allowed += other.dropped_as_allowed


def check(tally: Tally, request: kinds.Fuzzed, answer: Answer) -> None:
    """Count ``answer`` and note every invariant it breaks."""
    tally.by_status[answer.status] += 1
    where = f"{request.describe()} -> {answer.status} {answer.content_type} {answer.body[:200]!r}"
    if answer.status >= 500:
        tally.fail("answers >= 500", where, f" (status {answer.status})")
    if answer.status >= 400 and not _json_error(request, answer):
        tally.fail("error answers not the JSON envelope", where)


def _json_error(request: kinds.Fuzzed, answer: Answer) -> bool:
    if answer.content_type != "application/json":
        return False
    if request.method == "HEAD" and request.raw is None:
        return answer.body == b""
    try:
        envelope = json.loads(answer.body)
    except ValueError:
        return False
    keys = {"error"} if _plain_envelope(request.path) else {"error", "message"}
    return isinstance(envelope, dict) and all(isinstance(envelope.get(k), str) for k in keys)


def _plain_envelope(path: str) -> bool:
    """TF Serving (``/v1/``, any case) and V2 (``/v2``) answer errors as ``{"error"}``."""
    return path.lower().startswith("/v1/") or path == "/v2" or path.startswith(("/v2/", "/v2?"))


class Session:
    """One client's keep-alive connection, reopened only after the server said close."""

    def __init__(self, port: int, tally: Tally) -> None:
        self.port, self.tally = port, tally
        self.wire: Wire | None = None
        self.previous = "(none)"

    def send(self, request: kinds.Fuzzed) -> None:
        self.tally.requests += 1
        self.tally.by_kind[request.kind] += 1
        if request.one_shot:
            self._one_shot(request)
            return
        wire = self._connection()
        reused = wire.answered > 0
        try:
            closes = self._exchange(wire, request)
        except (Dropped, Truncated, TimeoutError) as exc:
            self._failed(request, exc, reused)
            closes = True
        if closes:
            self.close()

    def _connection(self) -> Wire:
        if self.wire is None:
            self.wire = Wire(self.port, ANSWER_TIMEOUT_S)
            self.tally.connections += 1
        return self.wire

    def _exchange(self, wire: Wire, request: kinds.Fuzzed) -> bool:
        """Send, check each answer; True when the server said it closes the connection."""
        answer = wire.exchange(request.wire(), head_only=request.method == "HEAD")
        check(self.tally, request, answer)
        self.previous = f"{request.describe()} -> {answer.status}"
        if request.then is not None and not answer.closes:
            answer = wire.read_answer(head_only=request.then.method == "HEAD")
            check(self.tally, request.then, answer)
        return answer.closes

    def _failed(self, request: kinds.Fuzzed, exc: Exception, reused: bool) -> None:
        if isinstance(exc, Dropped) and reused:
            what = "connections dropped after a keep-alive answer"
        elif isinstance(exc, Dropped):
            what = "connections closed without an answer"
        elif isinstance(exc, Truncated):
            what = "answers cut short"
        else:
            what = f"no answer within {ANSWER_TIMEOUT_S:.0f} s"
        self.tally.fail(what, f"{request.describe()}: {exc!r}; before it: {self.previous}")

    def _one_shot(self, request: kinds.Fuzzed) -> None:
        wire = Wire(self.port, ANSWER_TIMEOUT_S)
        self.tally.connections += 1
        try:
            answer = wire.exchange(request.wire(), half_close=request.half_close)
            check(self.tally, request, answer)
        except Dropped as exc:
            if not request.may_drop:
                self._failed(request, exc, reused=False)
            self.tally.dropped_as_allowed += 1
        except (Truncated, TimeoutError) as exc:
            self._failed(request, exc, reused=False)
        finally:
            wire.close()

    def close(self) -> None:
        if self.wire is not None:
            self.wire.close()
            self.wire = None
