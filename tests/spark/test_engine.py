"""``smserve score --engine spark`` on the shared local-cluster session: the local engine's
bytes for CSV and Parquet inputs, XGBoost and k-means, the endpoint's selectable outputs,
bad records, and Ctrl-C. Mini-batches of 256 bytes cut the CSV files into several shards, so
a run is several windows (Spark jobs) of two tasks, and answers cross windows and files."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from smserve.errors import ConfigError
from smserve.scoring.engine import Interrupted
from smserve.scoring.inputs import InputFile, discover
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.spark.engine import Job, _Jobs, score_files_on_spark
from tests.scoring.conftest import csv_body, outputs
from tests.spark.conftest import (
    FILE_ROWS,
    PYSPARK_PANDAS_WARNING,
    quiet,
    rows,
    score_locally,
    settings_for,
    write_csv,
)

pytestmark = pytest.mark.filterwarnings(PYSPARK_PANDAS_WARNING)

RUN = Run(max_payload_bytes=256, workers=1)
# Selectable outputs as SAGEMAKER_INFERENCE_OUTPUT names them (vector outputs included).
SELECTED = {"xgboost": "predicted_label,probabilities", "kmeans": "closest_cluster,contributions"}


def write_parquet(root: Path) -> None:
    for seed, (name, n) in enumerate(FILE_ROWS.items()):
        path = root / f"{name}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        columns = {f"f{j}": values for j, values in enumerate(rows(n, seed).T)}
        pq.write_table(pa.table(columns), path)


def _both(
    model_dir: Path,
    inputs: Path,
    out: Path,
    plan: Plan,
    environ: dict[str, str] | None = None,
    run: Run = RUN,
) -> tuple[Any, Any]:
    """The local engine's summary, then Spark's, on the same inputs and settings."""
    settings = settings_for(model_dir, environ)
    local = score_locally(settings, inputs, out / "local", plan, run)
    files = discover([str(inputs)], out / "spark")
    return local, score_files_on_spark(files, settings, plan, run, quiet())


@pytest.mark.parametrize("model", ["xgboost", "kmeans"])
def test_csv_files_are_the_local_engines_bytes(
    spark: Any, request: pytest.FixtureRequest, tmp_path: Path, model: str
) -> None:
    write_csv(tmp_path / "in", missing=model == "xgboost")
    plan = Plan(content_type="text/csv", accept="text/csv")
    model_dir = request.getfixturevalue(f"{model}_dir")
    local, on_spark = _both(model_dir, tmp_path / "in", tmp_path, plan)
    assert local.scored == on_spark.scored == 3
    spark_outputs = outputs(tmp_path / "spark")
    assert set(spark_outputs) == {"a.csv.out", "nested/b.csv.out", "c.csv.out"}
    assert spark_outputs == outputs(tmp_path / "local")
    assert spark_outputs["a.csv.out"].count(b"\n") == FILE_ROWS["a"]


@pytest.mark.parametrize("model", ["xgboost", "kmeans"])
def test_parquet_files_with_selected_outputs_are_the_local_engines_bytes(
    spark: Any, request: pytest.FixtureRequest, tmp_path: Path, model: str
) -> None:
    write_parquet(tmp_path / "in")
    plan = Plan(content_type="application/x-parquet", accept="application/x-parquet",
                split_type="None", assemble_with="None")  # fmt: skip
    environ = {"SAGEMAKER_INFERENCE_OUTPUT": SELECTED[model]}
    model_dir = request.getfixturevalue(f"{model}_dir")
    run = Run(max_payload_bytes=1 << 20, workers=1)  # a Parquet file is one record
    local, on_spark = _both(model_dir, tmp_path / "in", tmp_path, plan, environ, run)
    assert local.scored == on_spark.scored == 3
    spark_outputs = outputs(tmp_path / "spark")
    assert spark_outputs == outputs(tmp_path / "local")
    answer = pq.read_table(tmp_path / "spark" / "a.parquet.out")
    assert answer.column_names == SELECTED[model].split(",")
    assert answer.num_rows == FILE_ROWS["a"]


def test_bad_records_fail_or_are_skipped_exactly_as_locally(
    spark: Any, xgboost_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_csv(tmp_path / "in")
    lines = csv_body(rows(30, 9)).splitlines(keepends=True)
    lines[3], lines[21] = b"1,2\n", b"1,abc,2,3\n"  # a short row, a bad cell: records 4 and 22
    (tmp_path / "in" / "bad.csv").write_bytes(b"".join(lines))
    failing = Plan(content_type="text/csv", accept="text/csv")
    local, on_spark = _both(xgboost_dir, tmp_path / "in", tmp_path / "fail", failing)
    assert (local.scored, local.failed) == (on_spark.scored, on_spark.failed) == (3, 1)
    assert caplog.text.count("bad.csv: failed, no output written: record 4:") == 2
    assert outputs(tmp_path / "fail" / "spark") == outputs(tmp_path / "fail" / "local")
    skipping = Plan(content_type="text/csv", accept="application/jsonlines", on_error="skip")
    local, on_spark = _both(xgboost_dir, tmp_path / "in", tmp_path / "skip", skipping)
    assert local.skipped_records == on_spark.skipped_records == 2
    answers = outputs(tmp_path / "skip" / "spark")
    assert answers == outputs(tmp_path / "skip" / "local")
    assert b'"record":22}' in answers["bad.csv.out"]  # numbered across shards


class _StopAtFirstAnswer(Progress):
    """Ctrl-C as the first answer is written: deterministic, no signal racing the job."""

    def advance(self, records: int, input_bytes: int) -> None:
        raise KeyboardInterrupt


def test_ctrl_c_cancels_the_runs_jobs_and_keeps_no_unfinished_output(
    spark: Any, xgboost_dir: Path, tmp_path: Path
) -> None:
    write_csv(tmp_path / "in")
    files = discover([str(tmp_path / "in")], tmp_path / "out")
    plan = Plan(content_type="text/csv", accept="text/csv")
    progress = _StopAtFirstAnswer(sys.stderr, None, is_tty=False, interval_s=3600)
    with pytest.raises(Interrupted):
        score_files_on_spark(files, settings_for(xgboost_dir), plan, RUN, progress)
    assert not (tmp_path / "out").exists() or outputs(tmp_path / "out") == {}
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
    assert spark.range(3).count() == 3  # the caller's session is left running


def _late_and_slow(context: Any, group: str) -> Any:
    time.sleep(0.5)  # the first cancel has come and gone
    context.setJobGroup(group, "late", interruptOnCancel=True)
    return context.parallelize([1], 1).map(lambda x: time.sleep(120) or x).collect()


def test_a_job_started_just_after_the_cancel_is_cancelled_too(
    spark: Any, xgboost_dir: Path
) -> None:
    context = spark.sparkContext
    jobs = _Jobs(spark, Job(settings_for(xgboost_dir), Plan(), RUN))
    jobs.pool.submit(_late_and_slow, context, jobs.group)
    started = time.monotonic()
    with pytest.raises(Interrupted):
        jobs.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)  # Ctrl-C in the with block
    assert time.monotonic() - started < 30  # not the 120 s the job takes uncancelled
    assert context.statusTracker().getJobIdsForGroup(jobs.group) != []  # it did start
    assert context.statusTracker().getActiveJobsIds() == []


def test_standard_input_is_refused(xgboost_dir: Path) -> None:
    stdin = [InputFile(None, Path("stdin"), None)]
    with pytest.raises(ConfigError, match="not - \\(standard input\\)"):
        score_files_on_spark(stdin, settings_for(xgboost_dir), Plan(), RUN, quiet())
