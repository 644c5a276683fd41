"""Shards: cut where ``chunks`` cuts a whole file, scored by two workers into the same bytes
as one pass over the file, with record numbers counted across shards."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path, PurePath

import numpy as np
import orjson
import pytest

from smserve.config import Settings
from smserve.scoring.engine import score_files
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from smserve.scoring.scorer import Scorer, build_service
from smserve.scoring.shards import SHARD_MINI_BATCHES, plan
from smserve.scoring.split import RecordTooLarge, chunks
from tests.process.servers import run_cli, server_env
from tests.scoring.conftest import csv_body

PAYLOAD = 300  # bytes: a 400-row file is dozens of mini-batches, many shards
ROWS = np.random.default_rng(5).normal(size=(400, 4)).astype(np.float32)


def _file(tmp_path: Path, body: bytes) -> InputFile:
    path = tmp_path / "in.csv"
    path.write_bytes(body)
    return InputFile(path, PurePath("in.csv"), tmp_path / "out" / "in.csv.out")


def _score(model_dir: Path, item: InputFile, plan: Plan, workers: int = 2) -> bytes | None:
    settings = Settings.from_env({}).replace(model_dir=model_dir, batch_mode=True)
    run = Run(max_payload_bytes=PAYLOAD, workers=workers)
    progress = Progress(io.StringIO(), None, is_tty=False, interval_s=3600)
    score_files([item], settings, plan, run, progress)
    assert isinstance(item.output, Path)
    return item.output.read_bytes() if item.output.exists() else None


def _one_pass(model_dir: Path, body: bytes, plan: Plan) -> bytes:
    """The whole file split by ``chunks`` and answered in order, in this process."""
    settings = Settings.from_env({}).replace(model_dir=model_dir, batch_mode=True)
    scorer = Scorer(build_service(settings), plan)
    return b"".join(scorer.score(c).body for c in chunks(io.BytesIO(body), "Line", PAYLOAD))


def test_shards_start_where_chunks_would_cut_the_whole_file(tmp_path: Path) -> None:
    item = _file(tmp_path, csv_body(ROWS)[:-1])  # no newline at the end
    shards = list(plan(item, "Line", PAYLOAD))
    whole = [c.offset for c in chunks(io.BytesIO(csv_body(ROWS)), "Line", PAYLOAD)]
    assert len(shards) > 3
    assert [s.start for s in shards] == whole[::SHARD_MINI_BATCHES]
    assert shards[-1].stop == len(csv_body(ROWS)) - 1


def test_a_line_over_the_limit_is_named_by_the_planner(tmp_path: Path) -> None:
    lines = csv_body(ROWS).split(b"\n")
    lines[60] = b"1" * (PAYLOAD + 1)
    item = _file(tmp_path, b"\n".join(lines))
    offset = len(b"\n".join(lines[:60])) + 1
    with pytest.raises(RecordTooLarge, match=rf"record 61 \(byte {offset}\)"):
        list(plan(item, "Line", PAYLOAD))


@pytest.mark.parametrize("accept", ["text/csv", "application/json", "application/jsonlines"])
def test_two_workers_write_the_bytes_of_one_pass(
    model_dir: Path, tmp_path: Path, accept: str
) -> None:
    body = csv_body(ROWS)
    scoring = Plan(content_type="text/csv", accept=accept)
    assert _score(model_dir, _file(tmp_path, body), scoring) == _one_pass(model_dir, body, scoring)


def _with_bad_lines(*numbers: int) -> bytes:
    lines = csv_body(ROWS).split(b"\n")
    for number in numbers:
        lines[number - 1] = b"1.0,abc,2.0,3.0"
    return b"\n".join(lines)


def test_a_bad_record_in_a_late_shard_is_named_by_its_line(
    model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    item = _file(tmp_path, _with_bad_lines(371))
    assert _score(model_dir, item, Plan(content_type="text/csv")) is None
    assert "in.csv: failed, no output written: record 371:" in caplog.text


def test_skipped_records_keep_their_line_numbers_across_shards(
    model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    item = _file(tmp_path, _with_bad_lines(2, 250, 399))
    answer = _score(model_dir, item, Plan(content_type="text/csv", on_error="skip"))
    assert answer is not None
    lines = answer.split(b"\n")
    assert len(lines) == 401
    for number in (2, 250, 399):
        assert orjson.loads(lines[number - 1])["record"] == number
        assert f"in.csv: record {number} skipped" in caplog.text


def test_workers_import_xgboost_without_scikit_learn_which_stays_importable() -> None:
    code = (
        "import sys; from smserve.config import Settings; from smserve.scoring import worker\n"
        "worker.preload(Settings.from_env({}))\n"
        "assert 'xgboost' in sys.modules and 'sklearn' not in sys.modules\n"
        "import sklearn.cluster; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.process
def test_the_command_forks_two_workers_that_write_the_bytes_of_one_pass(
    model_dir: Path, tmp_path: Path
) -> None:
    item = _file(tmp_path, csv_body(ROWS))
    args = [
        "score", str(item.path), "--output", str(tmp_path / "out"), "--model-dir", str(model_dir),
        "--content-type", "text/csv", "--workers", "2", "--max-payload-mb", str(PAYLOAD / 2**20),
    ]  # fmt: skip
    result = run_cli(args, server_env(8080, {}))
    assert result.returncode == 0, result.stderr
    expected = _one_pass(model_dir, csv_body(ROWS), Plan(content_type="text/csv"))
    assert (tmp_path / "out" / "in.csv.out").read_bytes() == expected
