"""JoinSource=Input rules, input discovery and output names, and the progress display."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import orjson
import pytest

from smserve.errors import ConfigError
from smserve.scoring.inputs import discover
from smserve.scoring.join import join_csv, join_json, joiner
from smserve.scoring.progress import Progress


def test_csv_join_appends_the_answer_after_the_input_row() -> None:
    assert join_csv([b"1,2\r\n", b"3,4\n"], [b"0.5", b'1,"[0.4, 0.6]"']) == [
        b"1,2,0.5",
        b'3,4,1,"[0.4, 0.6]"',
    ]


def test_json_join_adds_sagemaker_output_or_wraps_a_non_object() -> None:
    joined = join_json([b'{"id": 7, "features": [1]}\n', b"[1, 2]\n"], [b'{"score":0.5}'] * 2)
    assert [orjson.loads(line) for line in joined] == [
        {"id": 7, "features": [1], "SageMakerOutput": {"score": 0.5}},
        {"SageMakerInput": [1, 2], "SageMakerOutput": {"score": 0.5}},
    ]


def test_joins_need_matching_formats() -> None:
    assert joiner("application/jsonlines", "application/json") is join_json
    with pytest.raises(ConfigError, match="not text/csv with application/json"):
        joiner("text/csv", "application/json")


def test_folders_give_outputs_under_the_same_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("b.csv", "sub/a.csv", ".hidden", "sub/.x.out.tmp-1"):
        (tmp_path / "in" / name).write_text("1\n")
    (tmp_path / "one.csv").write_text("1\n")
    found = discover([str(tmp_path / "in"), str(tmp_path / "one.csv")], tmp_path / "out")
    assert [(str(f.relative), f.output) for f in found] == [
        ("b.csv", tmp_path / "out" / "b.csv.out"),
        ("sub/a.csv", tmp_path / "out" / "sub" / "a.csv.out"),
        ("one.csv", tmp_path / "out" / "one.csv.out"),
    ]


@pytest.mark.parametrize(
    ("names", "message"),
    [(["missing"], "no such file"), (["-", "{file}"], "--output DIR is needed")],
)
def test_bad_inputs_say_what_to_fix(tmp_path: Path, names: list[str], message: str) -> None:
    (tmp_path / "f.csv").write_text("1\n")
    with pytest.raises(ConfigError, match=message):
        discover([n.format(file=tmp_path / "f.csv") for n in names], None)


def test_two_inputs_with_one_output_name_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.csv").write_text("1\n")
    with pytest.raises(ConfigError, match="would both be written"):
        discover([str(tmp_path / "a"), str(tmp_path / "b" / "x.csv")], tmp_path / "out")


def test_a_terminal_gets_a_bar_with_rate_bytes_and_eta() -> None:
    progress = Progress(io.StringIO(), total_bytes=2_000_000, is_tty=True)
    progress.advance(500, 1_000_000)
    line = progress.line(progress.started + 2.0)
    assert line.startswith(" 50% [############............]")
    assert "500 records  250 records/s  1.0/2.0 MB  ETA 0:02" in line


def test_without_a_terminal_progress_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()
    progress = Progress(stream, total_bytes=None, is_tty=False, interval_s=0.0)
    with caplog.at_level(logging.INFO, logger="smserve.scoring.progress"):
        progress.advance(10, 100)
    assert "10 records" in caplog.text
    assert stream.getvalue() == ""
    assert progress.finish().startswith("10 records in ")
