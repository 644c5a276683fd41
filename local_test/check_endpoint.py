"""Check a running smserve server end to end (standard library only; used by container_test.sh).

    python3 local_test/check_endpoint.py --url http://127.0.0.1:8080 --algorithm xgboost

Posts every payload in local_test/payloads (one per request format, all holding the same six
rows: two per training blob) with every Accept type, and checks: status 200, the response
Content-Type is exactly the type asked for, one answer per row, every format giving the same
numbers as dense.csv -> application/json, and numbers that make sense for the model trained on
local_test's data (XGBoost: rows 3-4 are the positive blob; k-means: the rows pair up into three
distinct clusters). Also /ping, /execution-parameters, Accept negotiation and client errors.

XGBoost reads an entry left out of a sparse row (sparse.json, sparse.libsvm, sparse.pbr) as
*missing*, not as 0.0 (XGBoost's own semantics for CSR input, and the built-in container's), so
its sparse answers are compared with each other (sparse.json -> application/json is their
reference), not with the dense ones. k-means treats an absent entry as 0.0: all must agree.
Prints one line per check and exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
RECORDIO = "application/x-recordio-protobuf"
LIBSVM = "text/libsvm"
ACCEPTS = (JSON, JSONLINES, CSV, RECORDIO)
EXTENSIONS = {".csv": CSV, ".json": JSON, ".jsonl": JSONLINES, ".libsvm": LIBSVM, ".pbr": RECORDIO}
N_ROWS = 6
REL_TOL = 1e-5
ABS_TOL = 1e-6

Rows = list[dict[str, list[float]]]


class CheckFailed(Exception):
    pass


# --- HTTP --------------------------------------------------------------------------------------


def request(
    url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    """(status, Content-Type, body); HTTP error statuses are returned, not raised."""
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def essence(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


# --- response decoding into [{name: [values...]}, ...] ----------------------------------------


def _as_list(value: object) -> list[float]:
    items = value if isinstance(value, list) else [value]
    return [float("nan") if v is None else float(v) for v in items]


def _record(obj: object) -> dict[str, list[float]]:
    if not isinstance(obj, dict) or not obj:
        raise CheckFailed(f"expected a JSON object per row, got {obj!r:.80}")
    return {str(k): _as_list(v) for k, v in obj.items()}


def decode_json(body: bytes, names: list[str]) -> Rows:
    document = json.loads(body)
    if not isinstance(document, dict) or not isinstance(document.get("predictions"), list):
        raise CheckFailed(f'expected {{"predictions": [...]}}, got {body[:80]!r}')
    return [_record(item) for item in document["predictions"]]


def decode_jsonlines(body: bytes, names: list[str]) -> Rows:
    text = body.decode("utf-8")
    if text and not text.endswith("\n"):
        raise CheckFailed("JSON Lines body does not end with a newline")
    return [_record(json.loads(line)) for line in text.splitlines() if line.strip()]


def decode_csv(body: bytes, names: list[str]) -> Rows:
    rows = []
    for line in body.decode("utf-8").splitlines():
        if not line.strip():
            continue
        values = [float(v) for v in line.split(",")]
        if len(values) != len(names):
            raise CheckFailed(f"CSV line {line!r} has {len(values)} columns, expected {names}")
        rows.append({name: [value] for name, value in zip(names, values, strict=True)})
    return rows


def decode_recordio(body: bytes, names: list[str]) -> Rows:
    return [_decode_record(payload) for payload in _recordio_frames(body)]


def _recordio_frames(data: bytes) -> Iterator[bytes]:
    offset = 0
    while offset < len(data):
        magic, length = struct.unpack_from("<II", data, offset)
        if magic != 0xCED7230A:
            raise CheckFailed(f"bad RecordIO magic at offset {offset}")
        start = offset + 8
        if start + length > len(data):
            raise CheckFailed("truncated RecordIO record")
        yield data[start : start + length]
        offset = start + length + (-length % 4)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, bytes | int]]:
    """(field number, wire type, value) of a protobuf message; enough for aialgs Record."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, wire, data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            raise CheckFailed(f"unsupported protobuf wire type {wire}")


def _decode_record(payload: bytes) -> dict[str, list[float]]:
    labels = {}
    for number, _, entry in _fields(payload):
        if number == 2 and isinstance(entry, bytes):  # Record.label: map<string, Value>
            key, value = _map_entry(entry)
            labels[key] = value
    if not labels:
        raise CheckFailed("RecordIO record has no label entries")
    return labels


def _map_entry(entry: bytes) -> tuple[str, list[float]]:
    key, values = "", []
    for number, _, item in _fields(entry):
        if number == 1 and isinstance(item, bytes):
            key = item.decode("utf-8")
        elif number == 2 and isinstance(item, bytes):
            values = _tensor_values(item)
    return key, values


def _tensor_values(value: bytes) -> list[float]:
    # Value.float32_tensor = 2, float64_tensor = 3, int32_tensor = 7; Tensor.values = 1.
    formats = {2: ("<f", 4), 3: ("<d", 8), 7: (None, 0)}
    for number, _, tensor in _fields(value):
        if number in formats and isinstance(tensor, bytes):
            return _packed_values(tensor, *formats[number])
    raise CheckFailed("RecordIO label value holds no numeric tensor")


def _packed_values(tensor: bytes, fmt: str | None, size: int) -> list[float]:
    values: list[float] = []
    for number, wire, item in _fields(tensor):
        if number != 1:
            continue
        if wire == 2 and isinstance(item, bytes):
            if fmt is None:
                pos = 0
                while pos < len(item):
                    raw, pos = _varint(item, pos)
                    values.append(float(raw - (1 << 64) if raw >= 1 << 63 else raw))
            else:
                values.extend(v for (v,) in struct.iter_unpack(fmt, item))
        elif isinstance(item, bytes):
            values.append(struct.unpack(fmt or "<f", item)[0])
        else:
            values.append(float(item))
    return values


DECODERS: dict[str, Callable[[bytes, list[str]], Rows]] = {
    JSON: decode_json,
    JSONLINES: decode_jsonlines,
    CSV: decode_csv,
    RECORDIO: decode_recordio,
}


# --- checks ------------------------------------------------------------------------------------


def close(a: Rows, b: Rows) -> bool:
    if len(a) != len(b):
        return False
    for row_a, row_b in zip(a, b, strict=True):
        if set(row_a) != set(row_b):
            return False
        for name, values in row_a.items():
            other = row_b[name]
            if len(values) != len(other):
                return False
            for x, y in zip(values, other, strict=True):
                if not (math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL) or x == y):
                    return False
    return True


def sane_xgboost(rows: Rows) -> None:
    scores = [row["score"][0] for row in rows]
    if not all(0.0 <= s <= 1.0 for s in scores):
        raise CheckFailed(f"binary:logistic scores outside [0, 1]: {scores}")
    expected = [False, False, True, True, False, False]
    if [s > 0.5 for s in scores] != expected:
        raise CheckFailed(f"scores {scores} do not single out rows 3-4 (the positive blob)")


def sane_kmeans(rows: Rows) -> None:
    clusters = [row["closest_cluster"][0] for row in rows]
    distances = [row["distance_to_cluster"][0] for row in rows]
    if not all(c.is_integer() and 0 <= c < 3 for c in clusters):
        raise CheckFailed(f"closest_cluster values are not cluster indices 0..2: {clusters}")
    pairs = clusters[0::2] == clusters[1::2]
    if not pairs or len(set(clusters)) != 3:
        raise CheckFailed(f"clusters {clusters} do not pair rows up into 3 distinct blobs")
    if not all(0.0 <= d < 3.0 for d in distances):
        raise CheckFailed(f"distances {distances} are not small non-negative numbers")


SANITY = {"xgboost": sane_xgboost, "kmeans": sane_kmeans}


class Checker:
    def __init__(self, url: str, algorithm: str, payloads: Path) -> None:
        self.url = url.rstrip("/")
        self.algorithm = algorithm
        self.payloads = payloads
        self.passed = 0
        self.failed: list[str] = []
        self.names: list[str] = []
        self.references: dict[str, Rows] = {}

    def group(self, payload: Path) -> str:
        """Which reference a payload's answers must equal (see the module docstring)."""
        sparse = self.algorithm == "xgboost" and payload.name.startswith("sparse")
        return "sparse" if sparse else "dense"

    def check(self, label: str, func: Callable[[], str]) -> None:
        try:
            detail = func()
        except (CheckFailed, ValueError, KeyError, IndexError, struct.error) as error:
            self.failed.append(label)
            print(f"  FAIL  {label}: {error}", flush=True)
            return
        self.passed += 1
        print(f"  ok    {label}{': ' + detail if detail else ''}", flush=True)

    def invoke(self, body: bytes, content_type: str | None, accept: str | None) -> tuple:
        headers = {}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if accept is not None:
            headers["Accept"] = accept
        return request(f"{self.url}/invocations", body, headers)

    # individual checks

    def ping(self) -> str:
        status, _, _ = request(f"{self.url}/ping")
        if status != 200:
            raise CheckFailed(f"status {status}")
        return "200"

    def execution_parameters(self) -> str:
        status, ctype, body = request(f"{self.url}/execution-parameters")
        if status != 200 or essence(ctype) != JSON:
            raise CheckFailed(f"status {status}, Content-Type {ctype!r}")
        params = json.loads(body)
        missing = {"MaxConcurrentTransforms", "BatchStrategy", "MaxPayloadInMB"} - set(params)
        if missing:
            raise CheckFailed(f"missing {sorted(missing)} in {params}")
        return json.dumps(params, sort_keys=True)

    def reference_answer(self) -> str:
        body = (self.payloads / "dense.csv").read_bytes()
        status, ctype, answer = self.invoke(body, CSV, JSON)
        if status != 200:
            raise CheckFailed(f"status {status}: {answer[:200]!r}")
        first = json.loads(answer)["predictions"][0]
        self.names = list(first)
        rows = decode_json(answer, self.names)
        if len(rows) != N_ROWS:
            raise CheckFailed(f"{len(rows)} predictions for {N_ROWS} rows")
        SANITY[self.algorithm](rows)
        self.references["dense"] = rows
        shown = [{k: (v[0] if len(v) == 1 else v) for k, v in r.items()} for r in rows[:2]]
        return f"outputs {self.names}; first rows {shown}"

    def combination(self, payload: Path, accept: str) -> str:
        content_type = EXTENSIONS[payload.suffix]
        status, ctype, answer = self.invoke(payload.read_bytes(), content_type, accept)
        if status != 200:
            raise CheckFailed(f"status {status}: {answer[:200]!r}")
        if essence(ctype) != accept:
            raise CheckFailed(f"Content-Type {ctype!r}, asked for {accept}")
        rows = DECODERS[accept](answer, self.names)
        if len(rows) != N_ROWS:
            raise CheckFailed(f"{len(rows)} answers for {N_ROWS} rows")
        group = self.group(payload)
        if group not in self.references:  # the first sparse answer (xgboost only)
            if not all(0.0 <= row["score"][0] <= 1.0 for row in rows):
                raise CheckFailed(f"binary:logistic scores outside [0, 1]: {rows}")
            self.references[group] = rows
            return f"200 {ctype} (reference for sparse input: absent entries are missing)"
        expected = self.references[group]
        if not close(rows, expected):
            raise CheckFailed(f"answers differ from the {group} reference: {rows} vs {expected}")
        return f"200 {ctype}"

    def default_accept(self) -> str:
        body = (self.payloads / "dense.csv").read_bytes()
        status, ctype, answer = self.invoke(body, CSV, None)
        if status != 200 or essence(ctype) not in ACCEPTS:
            raise CheckFailed(f"status {status}, Content-Type {ctype!r}: {answer[:120]!r}")
        return f"no Accept -> {ctype}"

    def negotiated(self) -> str:
        body = (self.payloads / "dense.csv").read_bytes()
        status, ctype, _ = self.invoke(body, CSV, "text/csv;q=0.5, application/json")
        if status != 200 or essence(ctype) != JSON:
            raise CheckFailed(f"status {status}, Content-Type {ctype!r}; expected {JSON}")
        return f"q-values honoured -> {ctype}"

    def client_error(self, body: bytes, content_type: str, accept: str, allowed: set[int]) -> str:
        status, ctype, answer = self.invoke(body, content_type, accept)
        if status not in allowed:
            raise CheckFailed(
                f"status {status}, expected one of {sorted(allowed)}: {answer!r:.200}"
            )
        if not answer.strip():
            raise CheckFailed(f"status {status} with an empty body (the message should say why)")
        if essence(ctype) == JSON:
            json.loads(answer)
        return f"{status} {ctype}: {answer.decode('utf-8', 'replace').strip()[:100]}"

    def run(self) -> int:
        print(f"check_endpoint: {self.algorithm} at {self.url}", flush=True)
        self.check("GET /ping", self.ping)
        self.check("GET /execution-parameters", self.execution_parameters)
        self.check("reference dense.csv -> application/json", self.reference_answer)
        if self.references:
            payloads = sorted(p for p in self.payloads.iterdir() if p.suffix in EXTENSIONS)
            # sparse.json first among the sparse payloads: it sets the sparse reference.
            payloads.sort(key=lambda p: (p.name.startswith("sparse"), p.suffix != ".json"))
            for payload in payloads:
                for accept in ACCEPTS:
                    label = f"{payload.name:14} ({EXTENSIONS[payload.suffix]}) -> {accept}"
                    self.check(label, lambda p=payload, a=accept: self.combination(p, a))
        self.check("default Accept", self.default_accept)
        self.check("Accept with q-values", self.negotiated)
        errors = [
            ("unsupported Content-Type", b"1,2,3,4\n", "image/png", JSON, {415}),
            ("malformed CSV", b"a,b,c,d\n", CSV, JSON, {400, 415}),
            ("wrong feature count", b"1,2,3,4,5,6,7\n", CSV, JSON, {400}),
            ("unsupported Accept", b"1,2,3,4\n", CSV, "image/png", {406}),
        ]
        for label, body, ctype, accept, allowed in errors:
            self.check(
                f"client error: {label}",
                lambda b=body, c=ctype, a=accept, s=allowed: self.client_error(b, c, a, s),
            )
        total = self.passed + len(self.failed)
        print(f"check_endpoint: {self.algorithm}: {self.passed}/{total} checks passed", flush=True)
        return 1 if self.failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--algorithm", choices=sorted(SANITY), required=True)
    parser.add_argument("--payloads", type=Path, default=Path(__file__).parent / "payloads")
    args = parser.parse_args(argv)
    return Checker(args.url, args.algorithm, args.payloads).run()


if __name__ == "__main__":
    sys.exit(main())
