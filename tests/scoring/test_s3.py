"""``s3://`` inputs and outputs against a real S3 API on loopback (moto's server mode): a
listed prefix is scored like a local folder, with the local engine's exact outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from smserve.config import Settings
from tests.process.servers import run_cli
from tests.scoring.conftest import S3Service, outputs, write_inputs

pytestmark = pytest.mark.process


def _score(s3: S3Service, model_dir: Path, *args: str) -> None:
    base = ["score", "--model-dir", str(model_dir), "--content-type", "text/csv"]
    extra = ["--accept", "application/jsonlines", "--max-payload-mb", "0.0005", "--workers", "2"]
    result = run_cli([*base, *extra, *args], s3.env())
    assert result.returncode == 0, result.stderr


def test_an_s3_prefix_is_scored_like_a_local_folder(
    s3: S3Service, model_dir: Path, tmp_path: Path
) -> None:
    write_inputs(tmp_path / "in", "text/csv")
    s3.upload(tmp_path / "in", "in")
    _score(s3, model_dir, str(tmp_path / "in"), "--output", str(tmp_path / "local"))
    bucket = f"s3://{s3.bucket}"
    _score(s3, model_dir, f"{bucket}/in/", "--output", f"{bucket}/out")
    _score(s3, model_dir, f"{bucket}/in", "--output", str(tmp_path / "from-s3"))
    expected = outputs(tmp_path / "local")
    assert len(expected) == 3
    assert s3.objects("out") == expected
    assert outputs(tmp_path / "from-s3") == expected


def test_skip_existing_finds_outputs_in_s3(s3: S3Service, model_dir: Path, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", "text/csv")
    s3.upload(tmp_path / "in", "again")
    bucket = f"s3://{s3.bucket}"
    _score(s3, model_dir, f"{bucket}/again", "--output", f"{bucket}/again-out")
    s3.client().put_object(Bucket=s3.bucket, Key="again-out/a.data.out", Body=b"kept")
    _score(s3, model_dir, f"{bucket}/again", "--output", f"{bucket}/again-out", "--skip-existing")
    assert s3.objects("again-out")["a.data.out"] == b"kept"


def test_a_missing_prefix_is_a_usage_error_naming_it(s3: S3Service, model_dir: Path) -> None:
    args = ["score", f"s3://{s3.bucket}/nothing", "--output", "/tmp/unused", "--model-dir"]
    result = run_cli([*args, str(model_dir)], s3.env())
    assert result.returncode == 2
    assert f"s3://{s3.bucket}/nothing: no such object, and no objects under it" in result.stderr


def test_the_s3_endpoint_comes_from_the_s3_variable_first() -> None:
    both = {"AWS_ENDPOINT_URL": "http://all:1", "AWS_ENDPOINT_URL_S3": "http://s3:2"}
    assert Settings.from_env(both).s3_endpoint_url == "http://s3:2"
    assert Settings.from_env({"AWS_ENDPOINT_URL": "http://all:1"}).s3_endpoint_url == "http://all:1"
    assert Settings.from_env({}).s3_endpoint_url is None
