"""What a case of hostile.py is (``Case``), what it returns (``Outcome``), the servers it runs
against, and the one way every case sends its bytes and reads the answers (``send``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.hostile.hostile_wire import exchange, request

ROW = ",".join(["0.5"] * 50)
XGB_NAMED = "single"  # SM_MODEL_DIR: XGBoost whose own names are f0..f49 (all three doors)
MME = "mme"  # a multi-model endpoint: xgboost (no names) and kmeans registered


@dataclass
class Outcome:
    status: int | None
    seconds: float
    envelope: bool
    detail: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    server: str
    run: Callable[[int], Outcome]
    expect: tuple[int, ...] = ()
    sample: bool = False


def send(port: int, data: bytes, answers: int = 1) -> Outcome:
    start = time.monotonic()
    try:
        found = exchange(port, data, answers)
    except OSError as exc:  # a timeout, or a reset before any answer: a miss, not a crash
        return Outcome(None, time.monotonic() - start, False, f"no answer: {exc!r}")
    seconds = time.monotonic() - start
    if len(found) < answers:
        return Outcome(None, seconds, False, f"{len(found)} of {answers} answers")
    worst = max(found, key=lambda answer: answer.status)
    return Outcome(worst.status, seconds, all(a.envelope for a in found), worst.message[:160])


Body = bytes | Callable[[], bytes]  # a callable is built when the case runs (the big ones)


def post(path: str, body: Body, content_type: str, **headers: str) -> Callable[[int], Outcome]:
    fields = {"Content-Type": content_type, "Connection": "close", **headers}

    def run(port: int) -> Outcome:
        data = body() if callable(body) else body
        return send(port, request("POST", path, data, fields))

    return run
