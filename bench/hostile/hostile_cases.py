"""The cases of hostile.py, one per attack, grouped as the issue lists them: compressed and
declared-size bombs per format, wide rows, deep and long JSON per door, framing and smuggling
through nginx, slow readers, idle-connection floods, multi-model paths and names.

Each case sends what it sends through the real server and returns an Outcome: the status (of
the attack's answer, or of a normal request made while the attack holds), how long it took,
and whether the answer is the JSON envelope. ``expect`` lists the statuses that count as the
right answer; ``sample`` marks the cases CI runs."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

from bench.hostile import hostile_bodies as bodies
from bench.hostile.hostile_case import MME, ROW, XGB_NAMED, Case, Outcome, post, send
from bench.hostile.hostile_connections import idle_flood, slow_readers
from bench.hostile.hostile_wire import exchange, request


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


def _npy() -> list[Case]:
    """NumPy bodies: a declared shape of 10^12 rows (no values sent), an object array (a
    pickle), a header cut short, a header past numpy's bound, a Fortran-order array."""
    npy, invoke = "application/x-npy", "/invocations"
    return [
        Case("npy-declares-1e12-rows", "bomb", XGB_NAMED,
             post(invoke, bodies.npy_header("<f4", (10**12, 50)), npy), (413,), sample=True),
        Case("npy-object-dtype", "wide", XGB_NAMED,
             post(invoke, bodies.npy_object_array(), npy), (400,), sample=True),
        Case("npy-truncated-header", "wide", XGB_NAMED,
             post(invoke, bodies.npy_header("<f4", (2, 50))[:30], npy), (400,)),
        Case("npy-header-100kb", "wide", XGB_NAMED,
             post(invoke, bodies.npy_header("<f4", (1,) * 30_000), npy), (400,)),
        Case("npy-fortran-order", "wide", XGB_NAMED,
             post(invoke, bodies.npy_fortran(3, 50), npy), (200,)),
    ]  # fmt: skip


def all_cases() -> list[Case]:
    return [
        *_bombs(),
        *_npy(),
        *_wide(),
        *_json_doors(),
        *_framing(),
        Case("slow-readers-64x10mb", "slow", MME, slow_readers(), (200,)),
        Case("idle-connections-1000", "flood", XGB_NAMED, idle_flood(), (200,), sample=True),
        *_load_models(),
    ]
