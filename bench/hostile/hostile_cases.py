"""The cases of hostile.py, one per attack, grouped as the issue lists them: compressed and
declared-size bombs per format, wide rows, deep and long JSON per door, framing and smuggling
through nginx, slow readers, idle-connection floods, multi-model paths and names.

Each case sends what it sends through the real server and returns an Outcome: the status (of
the attack's answer, or of a normal request made while the attack holds), how long it took,
and whether the answer is the JSON envelope. ``expect`` lists the statuses that count as the
right answer; ``sample`` marks the cases CI runs."""

from __future__ import annotations

import json
import re
import socket
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from bench.hostile import hostile_bodies as bodies
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


def _bombs() -> list[Case]:
    """Sent to the unnamed XGBoost (columns by position, so the budget decides: a named model
    refuses a table without its columns first, as the ``-named`` case shows)."""
    arrow, parquet = "application/vnd.apache.arrow.stream", "application/x-parquet"
    gib, invoke = bodies.GIB, "/models/xgboost/invoke"
    return [
        Case("arrow-stream-zstd-2gib", "bomb", MME,
             post(invoke, lambda: bodies.arrow_bomb(2 * gib - 8), arrow), (413,), sample=True),
        Case("arrow-stream-zstd-2gib-named", "bomb", XGB_NAMED,
             post("/invocations", lambda: bodies.arrow_bomb(2 * gib - 8), arrow), (400, 413)),
        Case("arrow-file-zstd-2gib", "bomb", MME,
             post(invoke, lambda: bodies.arrow_bomb(2 * gib - 8, file=True),
                  "application/vnd.apache.arrow.file"), (413,)),
        Case("arrow-stream-lz4-1gib", "bomb", MME,
             post(invoke, lambda: bodies.arrow_bomb(gib, "lz4"), arrow), (413,)),
        Case("arrow-declares-1tib", "bomb", MME,
             post(invoke, lambda: bodies.arrow_bomb(1 << 40, lie=True), arrow), (413,)),
        Case("parquet-page-2gib", "bomb", MME,
             post(invoke, lambda: bodies.parquet_page_bomb(2**31 - 1), parquet), (413,),
             sample=True),
        Case("parquet-60000-columns", "bomb", MME,
             post(invoke, lambda: bodies.parquet_wide(60_000), parquet), (413,)),
        Case("parquet-60000-columns-named", "bomb", XGB_NAMED,
             post("/invocations", lambda: bodies.parquet_wide(60_000), parquet), (400, 413)),
        Case("parquet-declares-1e12-rows", "bomb", MME,
             post(invoke, lambda: bodies.parquet_rows_lie(10**12), parquet), (413,)),
        Case("tfs-gzip-1gib", "bomb", XGB_NAMED,
             post("/v1/models/model:predict", _inflating_to(gib, 31), "application/json",
                  **{"Content-Encoding": "gzip"}), (413,)),
        Case("v2-deflate-1gib", "bomb", XGB_NAMED,
             post("/v2/models/model/infer", _inflating_to(gib, 15), "application/json",
                  **{"Content-Encoding": "deflate"}), (413,)),
    ]  # fmt: skip


def _inflating_to(size: int, wbits: int) -> Callable[[], bytes]:
    """One gzip member (``wbits`` 31) or zlib stream (15) of ``size`` spaces, made in 64 MiB
    steps: about 1 MB per GiB."""

    def make() -> bytes:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits)
        chunk = b" " * (64 << 20)
        parts = [squeeze.compress(chunk) for _ in range(size // len(chunk))]
        return b"".join(parts) + squeeze.flush()

    return make


def _wide() -> list[Case]:
    million = b",".join([b"1"] * 1_000_000) + b"\n"  # 2 MB: Arrow's reader's size
    wide_json = b"[[" + b",".join([b"1"] * 1_000_000) + b"]]"
    return [
        Case("csv-1m-fields-arrow-size", "wide", XGB_NAMED,
             post("/invocations", million, "text/csv"), (400,), sample=True),
        Case("csv-60000-fields-numpy-size", "wide", XGB_NAMED,
             post("/invocations", b",".join([b"1"] * 60_000), "text/csv"), (400,)),
        Case("csv-1m-fields-unnamed", "wide", MME,
             post("/models/xgboost/invoke", million, "text/csv"), (400,)),
        Case("libsvm-index-2147483646", "wide", XGB_NAMED,
             post("/invocations", b"0:1 2147483646:1\n", "text/libsvm"), (400,)),
        Case("json-1m-values-row", "wide", XGB_NAMED,
             post("/invocations", wide_json, "application/json"), (400,)),
        Case("json-sparse-width-2e9", "wide", XGB_NAMED,
             post("/invocations", b'[{"data": {"features": {"keys": [0], "values": [1], '
                  b'"shape": [2000000000]}}}]', "application/json"), (400,)),
    ]  # fmt: skip


DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE_INTEGER = b"1" + b"0" * 100_000
LONG_STRING = b'"' + b"A" * 5_000_000 + b'"'


def _json_doors() -> list[Case]:
    doors = {
        "sm": ("/invocations", lambda v: b'{"instances": [' + v + b"]}"),
        "tfs": ("/v1/models/model:predict", lambda v: b'{"instances": [' + v + b"]}"),
        "tfs-b64": ("/v1/models/model:predict", lambda v: b'{"instances": [{"b64": ' + v + b"}]}"),
        "v2": ("/v2/models/model/infer", lambda v: b'{"inputs": [{"name": "x", "shape": [1, 50], '
               b'"datatype": "FP32", "data": ' + v + b"}]}"),
    }  # fmt: skip
    values = {"deep": DEEP, "100k-digit-integer": HUGE_INTEGER, "5mb-string": LONG_STRING}
    cases = [
        Case(f"{door}-json-{kind}", "json", XGB_NAMED,
             post(path, wrap(value), "application/json"), (400,),
             sample=(door, kind) in {("tfs", "100k-digit-integer"), ("tfs-b64", "5mb-string")})
        for door, (path, wrap) in doors.items()
        for kind, value in values.items()
        if not (door == "tfs-b64" and kind != "5mb-string")
    ]  # fmt: skip
    models = [
        Case("models-json-deep", "json", MME, post("/models", DEEP[:60_000], "application/json"),
             (400,), sample=True),
        Case("models-json-70kb", "json", MME,
             post("/models", b'{"model_name": "x", "url": "' + b"a" * 70_000 + b'"}',
                  "application/json"), (413,)),
        Case("models-json-100k-digit", "json", MME,
             post("/models", b'{"model_name": ' + HUGE_INTEGER[:60_000] + b"}",
                  "application/json"), (400,)),
    ]  # fmt: skip
    return cases + models


def _framing() -> list[Case]:
    csv = ROW.encode() + b"\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(csv), csv)
    head = "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n"
    smuggled = b"0\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n"
    return [
        Case("content-length-and-chunked", "framing", XGB_NAMED,
             lambda port: send(port, (head + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"
                                      "\r\n").encode() + chunked), (400,), sample=True),
        Case("duplicate-content-length", "framing", XGB_NAMED,
             lambda port: send(port, (head + f"Content-Length: {len(csv)}\r\nContent-Length: "
                                      f"{len(csv) + 1}\r\n\r\n").encode() + csv + b"x"), (400,)),
        Case("chunk-size-overflow", "framing", XGB_NAMED,
             lambda port: send(port, (head + "Transfer-Encoding: chunked\r\n\r\n").encode()
                               + b"ffffffffffffffffff\r\nab\r\n0\r\n\r\n"), (400,)),
        Case("chunked-smuggled-request", "framing", XGB_NAMED,
             lambda port: send(port, (head + "Transfer-Encoding: chunked\r\n\r\n").encode()
                               + smuggled, answers=2), (400, 204, 200)),
        Case("pipelined-3", "framing", XGB_NAMED,
             lambda port: send(port, request("POST", "/invocations", csv,
                                             {"Content-Type": "text/csv"}) * 3, answers=3),
             (200,)),
    ]  # fmt: skip


def slow_readers(clients: int = 64, rows: int = 20_000) -> Callable[[int], Outcome]:
    """``clients`` connections each ask for a ~10 MB answer (k-means contributions of
    ``rows`` rows, as CSV) and never read it; a normal request is timed meanwhile."""
    body = b"0:1\n" * rows
    data = request(
        "POST",
        "/models/kmeans/invoke",
        body,
        {
            "Content-Type": "text/libsvm",
            "Accept": "text/csv",
            "X-Amzn-SageMaker-Custom-Attributes": "outputs=contributions",
        },
    )

    def run(port: int) -> Outcome:
        before = _kmeans_answers(port)[0]
        held = [_stalled(port, data) for _ in range(clients)]
        _until_answered(port, before + clients)  # the answers are made and wait in nginx
        try:
            return send(port, request("POST", "/models/xgboost/invoke", ROW.encode(),
                                      {"Content-Type": "text/csv"}))  # fmt: skip
        finally:
            for sock in held:
                sock.close()

    return run


_ANSWERED = re.compile(
    rb'^smserve_requests_total\{[^}]*model="kmeans"[^}]*status="200"\} (\d+)$', re.M
)


def _kmeans_answers(port: int) -> tuple[int, bool]:
    """(k-means answers given so far, whether the workers hold no request) from the metrics."""
    found = exchange(port, request("GET", "/metrics"))
    page = found[0].body if found else b""
    return sum(int(n) for n in _ANSWERED.findall(page)), b"\nsmserve_requests_in_flight 0\n" in page


def _until_answered(port: int, count: int, timeout_s: float = 120.0) -> None:
    """Until ``count`` k-means answers are made and the workers hold nothing, at most
    ``timeout_s``: computing the held answers is queued work; what is timed after it is
    whether answers nobody reads still hold a worker."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answered, idle = _kmeans_answers(port)
        if answered >= count and idle:
            return
        time.sleep(0.25)


def idle_flood(connections: int = 1000) -> Callable[[int], Outcome]:
    """``connections`` connections that send nothing (and some half a header line)."""

    def run(port: int) -> Outcome:
        held = []
        for index in range(connections):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if index % 2:
                sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Ty")
            held.append(sock)
        time.sleep(1)
        try:
            return send(port, request("POST", "/invocations", ROW.encode(),
                                      {"Content-Type": "text/csv"}))  # fmt: skip
        finally:
            for sock in held:
                sock.close()

    return run


def _stalled(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never read
    sock.sendall(data)
    return sock


def _load_models() -> list[Case]:
    """Registrations that must be refused: names outside the safe set, urls outside the
    models directory, and model folders that link outside it (set up by hostile.py)."""
    registrations = {
        "name-dotdot": {"model_name": "..", "url": "xgboost"},
        "name-dotdot-slash": {"model_name": "../x", "url": "xgboost"},
        "name-control-char": {"model_name": "a\u0007b", "url": "xgboost"},
        "url-absolute-outside": {"model_name": "abs", "url": "/etc"},
        "url-dotdot-outside": {"model_name": "up", "url": "../outside/model"},
        "symlinked-model-file": {"model_name": "linkfile", "url": "linked-file"},
        "symlinked-model-folder": {"model_name": "linkdir", "url": "linked-folder"},
        "symlink-to-etc-passwd": {"model_name": "passwd", "url": "passwd-link"},
    }
    return [
        Case(f"models-{name}", "mme-paths", MME, _register(document), (400, 404),
             sample=name == "symlinked-model-file")
        for name, document in registrations.items()
    ]  # fmt: skip


def _register(document: dict[str, str]) -> Callable[[int], Outcome]:
    body = json.dumps(document).encode()

    def run(port: int) -> Outcome:
        outcome = send(port, request("POST", "/models", body, {"Content-Type": "application/json"}))
        if outcome.status == 200:  # leave the endpoint as it was
            name = document["model_name"]
            exchange(port, request("DELETE", f"/models/{name}"))
        return outcome

    return run


def all_cases() -> list[Case]:
    return [
        *_bombs(),
        *_wide(),
        *_json_doors(),
        *_framing(),
        Case("slow-readers-64x10mb", "slow", MME, slow_readers(), (200,)),
        Case("idle-connections-1000", "flood", XGB_NAMED, idle_flood(), (200,), sample=True),
        *_load_models(),
    ]
