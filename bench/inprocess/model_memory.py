"""What a loaded model costs a worker: resident memory growth (and the peak while loading)
per XGBoost model (several sizes, JSON and UBJSON) and k-means model (several sizes, MXNet
NDArray, .npy and skops), against the model files' bytes and ``algorithms.footprint``.

    .venv/bin/python bench/inprocess/model_memory.py [--threads 1] [--quick]

Each model is loaded in a fresh process that first loads a tiny model of the same kind and
format (so the libraries' one-off import is not counted), resets its peak (Linux
``/proc/self/clear_refs``), loads the measured model, then three more copies of it, each
through ``ModelLoader`` as a worker loads it. ``--threads`` is the XGBoost threads per worker
(``cpu_count // workers``): above one a worker also keeps a single-threaded copy of each
booster. ``algorithms.footprint``'s rates are calibrated from these tables
(docs/design/multi-model.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import xgboost as xgb

from smserve.algorithms.ndarray import write_ndarray_file

N_FEATURES = 50
XGBOOST_SIZES = ((100, 6), (300, 8), (1000, 8))  # trees, depth
XGBOOST_QUICK = ((100, 6), (300, 8))
KMEANS_SIZES = ((10, 50), (1000, 1000), (4000, 2500))  # k, d
KMEANS_QUICK = ((10, 50), (1000, 1000))
MIB = 1 << 20
COPIES = 3  # further copies loaded to measure the marginal cost


def build_xgboost(where: Path, trees: int, depth: int) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2_000, N_FEATURES)).astype(np.float32)
    y = x @ rng.normal(size=N_FEATURES) + rng.normal(size=len(x))
    params = {"max_depth": depth, "eta": 0.05, "nthread": 2, "tree_method": "hist", "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(x, y), num_boost_round=trees)
    dirs = {}
    for fmt in ("json", "ubj"):
        model_dir = where / f"xgboost-{trees}x{depth}-{fmt}"
        model_dir.mkdir()
        (model_dir / "xgboost-model").write_bytes(bytes(booster.save_raw(fmt)))
        dirs[f"xgboost {trees} trees depth {depth} {fmt}"] = model_dir
    return dirs


def build_kmeans(where: Path, k: int, d: int) -> dict[str, Path]:
    centroids = np.random.default_rng(1).normal(size=(k, d)).astype(np.float32)
    ndarray_dir = where / f"kmeans-{k}x{d}-ndarray"
    ndarray_dir.mkdir()
    write_ndarray_file(ndarray_dir / "model_algo-1", centroids)
    npy_dir = where / f"kmeans-{k}x{d}-npy"
    npy_dir.mkdir()
    np.save(npy_dir / "centroids.npy", centroids)
    built = {f"kmeans k={k} d={d} ndarray": ndarray_dir, f"kmeans k={k} d={d} npy": npy_dir}
    try:
        import skops.io as sio
        from sklearn.cluster import KMeans
    except ImportError:
        return built
    skops_dir = where / f"kmeans-{k}x{d}-skops"
    skops_dir.mkdir()
    fitted = KMeans(n_clusters=k, init=centroids, n_init=1, max_iter=1).fit(centroids)
    sio.dump(fitted, skops_dir / "kmeans.skops")
    return {**built, f"kmeans k={k} d={d} skops": skops_dir}


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def measure(model_dir: Path, warm_dir: Path, threads: int) -> dict[str, float]:
    """In this (fresh) process, loading as a worker does (``ModelLoader``, which hands what
    parsing freed back to the kernel): the resident growth of the first load of
    ``model_dir``, the peak while loading it, the growth per further copy, and the estimate."""
    import gc

    from smserve.algorithms import catalog
    from smserve.config import Settings
    from smserve.repository.loading import ModelLoader

    settings = Settings(cpu_count=threads, workers=1, xgboost_device="cpu")
    loader = ModelLoader(settings)
    held = [loader.load("warm", 1, warm_dir, None)]
    gc.collect()
    estimate = catalog.estimate(settings, model_dir)  # libraries imported: not counted
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current VmRSS
    before = status_kib("VmRSS")
    held.append(loader.load("measured", 1, model_dir, None))
    gc.collect()
    first = status_kib("VmRSS")
    peak = status_kib("VmHWM")
    for copy in range(COPIES):
        held.append(loader.load(f"copy-{copy}", 1, model_dir, None))
    gc.collect()
    last = status_kib("VmRSS")
    return {
        "file_mib": sum(p.stat().st_size for p in model_dir.iterdir()) / MIB,
        "resident_mib": (first - before) / 1024,
        "copy_mib": (last - first) / 1024 / COPIES,
        "peak_mib": (peak - before) / 1024,
        "estimated_resident_mib": estimate.resident / MIB,
        "estimated_peak_mib": estimate.peak / MIB,
    }


def run_child(model_dir: Path, warm_dir: Path, threads: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(model_dir), str(warm_dir), str(threads)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="the two smaller sizes only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smserve-memory-") as scratch:
        where = Path(scratch)
        (where / "warm-xgboost").mkdir()
        (where / "warm-kmeans").mkdir()
        warm = {  # a tiny model per format: label's last word -> folder
            label.rsplit(" ", 1)[1]: folder
            for label, folder in {
                **build_xgboost(where / "warm-xgboost", 2, 2),
                **build_kmeans(where / "warm-kmeans", 2, 2),
            }.items()
        }
        builds = [
            lambda t=t, d=d: build_xgboost(where, t, d)
            for t, d in (XGBOOST_QUICK if args.quick else XGBOOST_SIZES)
        ] + [
            lambda k=k, d=d: build_kmeans(where, k, d)
            for k, d in (KMEANS_QUICK if args.quick else KMEANS_SIZES)
        ]
        print(f"threads per worker: {args.threads}")
        print(
            "| model | file MiB | resident MiB (first, each further copy) | estimate "
            "| load peak MiB | estimate |"
        )
        print("|---|---:|---:|---:|---:|---:|", flush=True)
        for build in builds:
            for label, model_dir in build().items():
                row = run_child(model_dir, warm[label.rsplit(" ", 1)[1]], args.threads)
                print(
                    f"| {label} | {row['file_mib']:.2f} | {row['resident_mib']:.2f}, "
                    f"{row['copy_mib']:.2f} | {row['estimated_resident_mib']:.2f} | "
                    f"{row['peak_mib']:.2f} | {row['estimated_peak_mib']:.2f} |",
                    flush=True,
                )
                shutil.rmtree(model_dir)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        print(json.dumps(measure(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))))
    else:
        main()
