"""Cold start as a serverless endpoint sees it: seconds from ``docker run`` to the first 200 on
``/ping``, the image under ``--cpus 1 --memory 1g`` (serverless' smallest size), a ~100 MB
XGBoost model (JSON, as ``smserve train`` writes it) in ``model.tar.gz`` alone on a read-only
``/opt/ml/model``, as SageMaker mounts it once the archive is downloaded (``--format ubj``:
the same size in XGBoost's UBJSON instead, about twice as many trees).

    eval "$(bash local_test/container_engine.sh)"   # where `docker info` fails
    flock /tmp/smserve-bench.lock .venv/bin/python bench/serving/cold_start.py --image smserve:test

Runs alternate with the floor: the same ``docker run`` of the same image and limits whose
Python answers /ping with a bare ``http.server`` (container start plus an interpreter, nothing
of ours). Also timed here, in this process: unpacking the archive and loading the booster (what
the model itself costs, whoever serves it). Prints each run, medians and smserve / floor. The
model is trained once and kept under ``--cache`` (``--build-only`` trains it outside the lock).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import xgboost as xgb

if not __package__:  # run as a file: `bench` imports from the repository root
    sys.path[0] = str(Path(__file__).resolve().parents[2])
from bench.shared.harness import free_port  # noqa: E402

LIMITS = ("--cpus", "1")  # and --memory (default 1g, serverless' smallest)
FLOOR_SERVER = (
    "import http.server as s\n"
    "class H(s.BaseHTTPRequestHandler):\n"
    "    def do_GET(self): self.send_response(200); self.end_headers()\n"
    "s.HTTPServer(('0.0.0.0', 8080), H).serve_forever()\n"
)
N_FEATURES = 20
BATCH_TREES = 100


def build_model(target_mb: float, cache: Path, form: str = "json") -> Path:
    """``cache/model.tar.gz`` holding an ``xgboost-model`` of about ``target_mb`` MB (deep trees
    fitted to noise, so every tree is full), trained in batches until the file, in ``form``
    (``json`` or ``ubj``, XGBoost's two formats), is that big."""
    archive = cache / "model.tar.gz"
    if archive.exists():
        return archive
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20_000, N_FEATURES)).astype(np.float32)
    data = xgb.DMatrix(x, label=rng.random(20_000) > 0.5)
    # A small eta and no minimum child weight keep every tree full: with the defaults the
    # model soon fits the noise, the hessians vanish, trees shrink to stumps and the JSON
    # stops growing (the build then never reached its size).
    params = {
        "objective": "binary:logistic",
        "max_depth": 10,
        "eta": 0.01,
        "min_child_weight": 0,
        "tree_method": "hist",
        "seed": 0,
    }
    booster, raw = None, b""
    while len(raw) < target_mb * 1e6:
        booster = xgb.train(params, data, num_boost_round=BATCH_TREES, xgb_model=booster)
        raw = bytes(booster.save_raw(form))
    return _archived(raw, cache)


def same_model_as_ubjson(json_archive: Path, cache: Path) -> Path:
    """``cache/model.tar.gz``: the model of ``json_archive`` saved as UBJSON (the same trees,
    so the two formats' starts compare like for like)."""
    archive = cache / "model.tar.gz"
    if archive.exists():
        return archive
    with tempfile.TemporaryDirectory() as scratch, tarfile.open(json_archive) as tar:
        tar.extractall(scratch, filter="data")
        booster = xgb.Booster(model_file=str(Path(scratch) / "xgboost-model"))
    return _archived(bytes(booster.save_raw("ubj")), cache)


def _archived(raw: bytes, cache: Path) -> Path:
    archive = cache / "model.tar.gz"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "xgboost-model").write_bytes(raw)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(cache / "xgboost-model", arcname="xgboost-model")
    (cache / "xgboost-model").unlink()
    return archive


def in_process_load_s(archive: Path) -> float:
    """Unpack and load the booster here, single-threaded: the model's own share of a start."""
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        booster = xgb.Booster(params={"nthread": 1})
        booster.load_model(str(Path(scratch) / "xgboost-model"))
        return time.perf_counter() - started


def first_ping_s(
    run_args: list[str], memory: str, timeout_s: float = 180
) -> tuple[float, dict[str, object]]:
    """Seconds from ``docker run -d`` to the first 200 on /ping, and the container's final
    state (OOMKilled, exit code); the container is removed after."""
    name, port = f"smserve-cold-{uuid.uuid4().hex[:8]}", free_port()
    command = [
        "docker",
        "run",
        "-d",
        "--name",
        name,
        *LIMITS,
        "--memory",
        memory,
        "-p",
        f"127.0.0.1:{port}:8080",
    ]
    started = time.perf_counter()
    subprocess.run([*command, *run_args], check=True, capture_output=True)
    try:
        while not _answers(port):
            if time.perf_counter() - started > timeout_s:
                raise SystemExit(f"no 200 on /ping within {timeout_s} s: docker logs {name}")
            if not _state(name)["Running"]:  # it gave up: how long it took to say so, and why
                return time.perf_counter() - started, {**_state(name), "said": _last_line(name)}
            time.sleep(0.01)
        return time.perf_counter() - started, _state(name)
    finally:
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)


def _state(name: str) -> dict[str, object]:
    inspect = subprocess.run(
        ["docker", "inspect", "-f", "{{json .State}}", name], check=True, capture_output=True
    )
    state: dict[str, object] = json.loads(inspect.stdout)
    return state


def _last_line(name: str) -> str:
    logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True, check=False)
    lines = (logs.stdout + logs.stderr).strip().splitlines()
    return lines[-1] if lines else ""


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/ping")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="smserve:test")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--memory", default="1g", help="the container's memory limit (serverless: 1g to 6g)"
    )
    parser.add_argument("--model-mb", type=float, default=100)
    parser.add_argument(
        "--format",
        choices=("json", "ubj", "same-ubj"),
        default="json",
        help="the model file's format: XGBoost's JSON (what smserve train writes), UBJSON "
        "(XGBoost's default binary format, far cheaper to load; --model-mb of it), or "
        "same-ubj: the JSON model's trees saved as UBJSON",
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/smserve-cold-start"))
    parser.add_argument("--build-only", action="store_true", help="train the model, then stop")
    args = parser.parse_args()
    archive = _model(args.model_mb, args.cache, args.format)
    if args.build_only:
        print(f"{archive}: {archive.stat().st_size / 1e6:.1f} MB")
        return
    unpacked_mb = _unpacked_mb(archive)
    print(f"model.tar.gz {archive.stat().st_size / 1e6:.1f} MB ({unpacked_mb:.1f} MB unpacked)")
    serve = ["-v", f"{archive.parent}:/opt/ml/model:ro", args.image, "serve"]
    floor = ["--entrypoint", "python", args.image, "-c", FLOOR_SERVER]
    ours, floors = [], []
    for run in range(args.runs):
        floor_s, _ = first_ping_s(floor, args.memory)
        ours_s, state = first_ping_s(serve, args.memory)
        floors.append(floor_s)
        ours.append(ours_s)
        print(
            f"run {run + 1}: floor {floor_s:.2f} s, smserve {ours_s:.2f} s "
            f"(OOMKilled={state['OOMKilled']}, running={state['Running']})"
        )
        if not state["Running"]:
            print(f"  no 200: the container exited {state['ExitCode']}: {state['said']}")
    load = statistics.median(in_process_load_s(archive) for _ in range(args.runs))
    median_ours, median_floor = statistics.median(ours), statistics.median(floors)
    print(f"in this process, unpack + load the booster (1 thread): median {load:.2f} s")
    print(
        f"median: smserve {median_ours:.2f} s, floor {median_floor:.2f} s, "
        f"smserve / floor {median_ours / median_floor:.2f}x, "
        f"smserve - floor - in-process load {median_ours - median_floor - load:.2f} s"
    )


def _model(model_mb: float, cache: Path, form: str) -> Path:
    if form == "ubj":
        return build_model(model_mb, cache / f"{model_mb:g}mb-ubj", "ubj")
    json_model = build_model(model_mb, cache / f"{model_mb:g}mb")
    if form == "json":
        return json_model
    return same_model_as_ubjson(json_model, cache / f"{model_mb:g}mb-same-ubj")


def _unpacked_mb(archive: Path) -> float:
    with tarfile.open(archive) as tar:
        return sum(member.size for member in tar.getmembers()) / 1e6


if __name__ == "__main__":
    main()
