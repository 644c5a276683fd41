"""``smserve.spark.score`` on the shared local-cluster session: the numbers and column names
of ``smserve score``'s Parquet answers (the local engine, same model, same rows), for
Parquet and CSV DataFrames, default and selected outputs, kept columns; and mistakes
reported at the call with the endpoint's messages, or by the task for a bad value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from smserve.errors import DecodeError, InvalidInput, StartupError
from smserve.scoring.options import Plan, Run
from smserve.spark import score
from tests.scoring.conftest import csv_body
from tests.spark.conftest import N_FEATURES, PYSPARK_PANDAS_WARNING, score_locally, settings_for

pytestmark = pytest.mark.filterwarnings(PYSPARK_PANDAS_WARNING)

N_ROWS = 300
PARQUET = Plan(content_type="application/x-parquet", accept="application/x-parquet",
               split_type="None", assemble_with="None")  # fmt: skip


def _features(missing: bool = False) -> np.ndarray:
    rows = np.random.default_rng(4).normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    if missing:
        rows[::11, 1] = np.nan
    return rows


def _write_parquet(folder: Path, rows: np.ndarray) -> Path:
    folder.mkdir(parents=True)
    pq.write_table(pa.table({f"f{j}": rows[:, j] for j in range(N_FEATURES)}), folder / "x.parquet")
    return folder


def _expected(model_dir: Path, inputs: Path, out: Path, environ: dict[str, str]) -> pa.Table:
    """``smserve score``'s Parquet answer for ``inputs``'s one file (the local engine)."""
    run = Run(max_payload_bytes=1 << 20, workers=1)
    summary = score_locally(settings_for(model_dir, environ), inputs, out, PARQUET, run)
    assert summary.scored == 1
    return pq.read_table(out / "x.parquet.out")


def _spark_typed(table: pa.Table) -> pa.Table:
    """The encoder's table as Spark holds it: fixed-size lists as lists, nothing else."""
    fields = [
        pa.field(f.name, pa.list_(f.type.value_type) if pa.types.is_fixed_size_list(f.type)
                 else f.type)
        for f in table.schema
    ]  # fmt: skip
    return table.cast(pa.schema(fields))


@pytest.mark.parametrize(
    ("model", "outputs"),
    [
        ("xgboost", None),
        ("xgboost", ["Probabilities", "predicted_label", "probabilities"]),  # as CustomAttributes
        ("kmeans", None),
        ("kmeans", ["distance_to_cluster", "contributions"]),
    ],
)
def test_a_parquet_dataframe_gets_the_numbers_and_names_of_smserve_score(
    spark: Any, request: pytest.FixtureRequest, tmp_path: Path, model: str, outputs: Any
) -> None:
    model_dir = request.getfixturevalue(f"{model}_dir")
    inputs = _write_parquet(tmp_path / "in", _features(missing=model == "xgboost"))
    attribute = {} if outputs is None else {"SAGEMAKER_INFERENCE_OUTPUT": ",".join(outputs)}
    expected = _expected(model_dir, inputs, tmp_path / "out", attribute)
    scored = score(spark.read.parquet(str(inputs)), model_dir, outputs=outputs, environ={})
    answer = scored.toArrow()
    assert answer.column_names == expected.column_names
    assert answer.equals(_spark_typed(expected))


def test_environment_outputs_apply_and_kept_columns_come_first(
    spark: Any, kmeans_dir: Path, tmp_path: Path
) -> None:
    from pyspark.sql import functions

    inputs = _write_parquet(tmp_path / "in", _features())
    environ = {"SAGEMAKER_INFERENCE_OUTPUT": "closest_cluster"}
    expected = _expected(kmeans_dir, inputs, tmp_path / "out", environ)
    frame = spark.read.parquet(str(inputs))
    frame = frame.withColumn("id", functions.monotonically_increasing_id())
    answer = score(frame, kmeans_dir, keep=["id"], environ=environ).toArrow()
    assert answer.column_names == ["id", "closest_cluster"]
    assert answer.column("id").to_pylist() == list(range(N_ROWS))  # one file, one partition
    assert answer.column("closest_cluster").equals(expected.column("closest_cluster"))


def test_a_csv_dataframe_gets_the_numbers_of_smserve_score_on_the_csv_file(
    spark: Any, xgboost_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.csv").write_bytes(csv_body(_features(missing=True)))
    plan = Plan(content_type="text/csv", accept="text/csv")
    run = Run(max_payload_bytes=4096, workers=1)
    settings = settings_for(xgboost_dir, {"SAGEMAKER_INFERENCE_OUTPUT": "probabilities"})
    assert score_locally(settings, tmp_path / "in", tmp_path / "out", plan, run).scored == 1
    expected = np.loadtxt(tmp_path / "out" / "x.csv.out", delimiter=",", dtype=np.float32)
    schema = ", ".join(f"f{j} double" for j in range(N_FEATURES))
    frame = spark.read.csv(str(tmp_path / "in"), schema=schema)
    answer = score(frame, xgboost_dir, outputs=["probabilities"], environ={}).toArrow()
    np.testing.assert_array_equal(np.array(answer.column("probabilities").to_pylist()), expected)


def test_mistakes_are_reported_at_the_call_with_the_endpoints_messages(
    spark: Any, xgboost_dir: Path, tmp_path: Path
) -> None:
    frame = spark.createDataFrame([(1, 0.5, 1.0, 2.0, 3.0)], "id long, f0 double, f1 double, "
                                  "f2 double, f3 double")  # fmt: skip
    # the model has no feature names, so (as at the endpoint) a table is read by position
    with pytest.raises(InvalidInput, match="expected 4 features, got 5"):
        score(frame, xgboost_dir)
    with pytest.raises(InvalidInput, match="unknown outputs: nope; valid outputs for this model"):
        score(frame, xgboost_dir, outputs=["nope"], keep=["id"])
    with pytest.raises(InvalidInput, match=r"a list of keys, e.g. \['score'\]"):
        score(frame, xgboost_dir, outputs="score", keep=["id"])
    with pytest.raises(InvalidInput, match="keep= names 'ID'"):
        score(frame, xgboost_dir, keep=["ID"])
    words = spark.createDataFrame([("a", 1.0, 2.0, 3.0)], "f0 string, f1 double, f2 double, "
                                  "f3 double")  # fmt: skip
    with pytest.raises(DecodeError, match="column 'f0' holds string values"):
        score(words, xgboost_dir)
    with pytest.raises(StartupError):
        score(frame, tmp_path / "no-model", keep=["id"])


def test_a_bad_value_fails_the_job_with_the_endpoints_message(spark: Any, kmeans_dir: Path) -> None:
    """The row is counted within the Arrow batch that Spark handed the task."""
    from pyspark.errors import PythonException

    frame = spark.createDataFrame([(0.5, 1.0, 2.0, 3.0), (0.5, None, 2.0, 3.0)],
                                  "f0 double, f1 double, f2 double, f3 double")  # fmt: skip
    message = r"InvalidInput: row \d, column 'f1': the value is missing .* k-means needs every"
    with pytest.raises(PythonException, match=message):
        score(frame, kmeans_dir, environ={}).collect()
