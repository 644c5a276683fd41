"""A tiny multi-class XGBoost model (vector outputs: the hardest case to assemble), input
folders in every format, each holding several files of several mini-batches, moto's S3 server
on loopback, and a two-node Ray cluster on loopback (``ray_cluster``)."""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tests.process.servers import free_port, server_env
from tests.scoring.ray_cluster import TwoNodeCluster, use_environment
from tests.unit.codecs.recordio_bodies import dense_body

N_FEATURES = 4
FILE_ROWS = {"a": 40, "nested/b": 25, "nested/deeper/c": 1}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``xgboost-model``: multi:softprob, 3 classes, 4 features."""
    import xgboost as xgb

    x = np.random.default_rng(0).normal(size=(90, N_FEATURES)).astype(np.float32)
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, label=np.digitize(x[:, 0], [-0.5, 0.5])), 3)
    directory = tmp_path_factory.mktemp("model")
    (directory / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    return directory


def csv_body(rows: np.ndarray) -> bytes:
    lines = [",".join("" if np.isnan(v) else repr(float(v)) for v in row) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def jsonlines_body(rows: np.ndarray) -> bytes:
    return b"".join(orjson.dumps({"features": row.tolist()}) + b"\n" for row in rows)


def libsvm_body(rows: np.ndarray) -> bytes:
    lines = (" ".join(f"{i}:{float(v)!r}" for i, v in enumerate(row)) for row in rows)
    return ("\n".join(lines) + "\n").encode()


def json_body(rows: np.ndarray) -> bytes:
    return orjson.dumps({"instances": [{"features": row.tolist()} for row in rows]})


def recordio_body(rows: np.ndarray) -> bytes:
    return dense_body(rows.tolist())


def parquet_body(rows: np.ndarray) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({f"f{i}": rows[:, i] for i in range(rows.shape[1])})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


FORMATS: dict[str, Callable[[np.ndarray], bytes]] = {
    "text/csv": csv_body,
    "application/jsonlines": jsonlines_body,
    "text/libsvm": libsvm_body,
    "application/json": json_body,
    "application/x-recordio-protobuf": recordio_body,
    "application/x-parquet": parquet_body,
}


def write_inputs(root: Path, content_type: str, seed: int = 1) -> dict[str, bytes]:
    """One file per FILE_ROWS entry under ``root``; returns relative name -> body."""
    rng = np.random.default_rng(seed)
    bodies = {}
    for name, n_rows in FILE_ROWS.items():
        rows = rng.normal(size=(n_rows, N_FEATURES)).astype(np.float32)
        if content_type == "text/csv":
            rows[::7, 2] = np.nan  # empty cells: missing values
        path = root / f"{name}.data"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(FORMATS[content_type](rows))
        bodies[f"{name}.data"] = path.read_bytes()
    return bodies


def outputs(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path (hidden ones included)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# Throwaway credentials moto accepts; no instance metadata lookup (169.254.169.254 is not ours).
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
}  # fmt: skip


@dataclass(frozen=True)
class S3Service:
    """A real S3 API on loopback (moto's server mode), with a bucket named ``bucket``."""

    endpoint_url: str
    bucket: str = "scoring"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A CLI environment that reaches it: the endpoint and throwaway credentials."""
        aws = {"AWS_ENDPOINT_URL_S3": self.endpoint_url, **S3_CREDENTIALS}
        return server_env(8080, {**aws, **(extra or {})})

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name="us-east-1",
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )  # fmt: skip

    def upload(self, folder: Path, prefix: str) -> None:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            key = f"{prefix}/{path.relative_to(folder).as_posix()}"
            self.client().put_object(Bucket=self.bucket, Key=key, Body=path.read_bytes())

    def objects(self, prefix: str) -> dict[str, bytes]:
        """Every object under ``prefix/`` by relative key."""
        listed = self.client().list_objects_v2(Bucket=self.bucket, Prefix=f"{prefix}/")
        keys = [item["Key"] for item in listed.get("Contents", [])]
        return {
            key[len(prefix) + 1 :]: self.client()
            .get_object(Bucket=self.bucket, Key=key)["Body"]
            .read()
            for key in keys
        }


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Service]:
    pytest.importorskip("moto.server")
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    service = S3Service(f"http://127.0.0.1:{port}")
    service.client().create_bucket(Bucket=service.bucket)
    yield service
    server.stop()


_RAY_FOLDER = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Ray's environment for this run (``ray_cluster.environment``: loopback, our own token
    and temporary folder), set before any test module imports Ray and inherited by every
    process a test starts."""
    folder = Path(tempfile.mkdtemp(prefix="smserve-ray-", dir="/tmp"))
    config.stash[_RAY_FOLDER] = folder
    use_environment(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RAY_FOLDER in config.stash:
        shutil.rmtree(config.stash[_RAY_FOLDER], ignore_errors=True)


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[TwoNodeCluster]:
    """Started once for the package's Ray tests, stopped (by handle) after its last test. Each
    node has S3 credentials of its own, as an instance role would give it."""
    pytest.importorskip("ray.cluster_utils")
    cluster = TwoNodeCluster(node_environment=S3_CREDENTIALS)
    yield cluster
    cluster.stop()
