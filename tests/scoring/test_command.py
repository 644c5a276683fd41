"""``smserve score`` end to end in a subprocess: record errors, exit statuses, joins, resuming,
standard input and Ctrl-C."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest

from tests.process.servers import SMSERVE, run_cli, server_env
from tests.scoring.conftest import csv_body, jsonlines_body, outputs

pytestmark = pytest.mark.process

ROWS = np.random.default_rng(3).normal(size=(30, 4)).astype(np.float32)


def _score(
    model_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = ["score", "--model-dir", str(model_dir), "--content-type", "text/csv", "--workers", "1"]
    return run_cli([*base, *args], env or server_env(8080, {}))


def _bad_csv(path: Path, line: int) -> None:
    lines = csv_body(ROWS).split(b"\n")
    lines[line - 1] = b"1.0,abc,2.0,3.0"
    path.write_bytes(b"\n".join(lines))


def test_a_bad_record_fails_its_file_with_its_position(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.csv").write_bytes(csv_body(ROWS))
    _bad_csv(tmp_path / "in" / "bad.csv", line=17)
    result = _score(model_dir, str(tmp_path / "in"), "--output", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "bad.csv: failed, no output written: record 17:" in result.stderr
    assert "'abc'" in result.stderr
    assert list(outputs(tmp_path / "out")) == ["good.csv.out"]  # no temporary files left


def test_skip_writes_an_error_line_in_the_records_place(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    _bad_csv(tmp_path / "in" / "bad.csv", line=17)
    good = np.delete(ROWS, 16, axis=0)
    (tmp_path / "in" / "good.csv").write_bytes(csv_body(good))
    args = [str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--on-error", "skip"]
    result = _score(model_dir, *args, "--max-payload-mb", "0.0005")
    assert result.returncode == 3, result.stderr
    lines = (tmp_path / "out" / "bad.csv.out").read_bytes().split(b"\n")
    error = orjson.loads(lines.pop(16))
    assert error["record"] == 17
    assert "'abc'" in error["error"]
    assert b"\n".join(lines) == (tmp_path / "out" / "good.csv.out").read_bytes()


def test_join_source_input_appends_the_answer_to_each_csv_row(
    model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "x.csv").write_bytes(csv_body(ROWS))
    plain = _score(model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path / "plain"))
    joined = _score(
        model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path / "joined"),
        "--join-source", "Input",
    )  # fmt: skip
    assert plain.returncode == joined.returncode == 0, joined.stderr
    answers = (tmp_path / "plain" / "x.csv.out").read_bytes().splitlines()
    inputs = csv_body(ROWS).splitlines()
    expected = b"".join(i + b"," + a + b"\n" for i, a in zip(inputs, answers, strict=True))
    assert (tmp_path / "joined" / "x.csv.out").read_bytes() == expected


def test_join_source_input_adds_sagemaker_output_to_json_lines(
    model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "x.jsonl").write_bytes(jsonlines_body(ROWS[:3]) + b"[1.0, 2.0, 3.0, 4.0]\n")
    result = run_cli(
        ["score", "--model-dir", str(model_dir), str(tmp_path / "x.jsonl"),
         "--output", str(tmp_path / "out"), "--content-type", "application/jsonlines",
         "--accept", "application/jsonlines", "--join-source", "Input", "--workers", "1"],
        server_env(8080, {}),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [
        orjson.loads(line) for line in (tmp_path / "out" / "x.jsonl.out").read_bytes().splitlines()
    ]
    assert lines[0]["features"] == ROWS[0].tolist()
    assert len(lines[0]["SageMakerOutput"]["score"]) == 3
    assert lines[3]["SageMakerInput"] == [1.0, 2.0, 3.0, 4.0]
    assert set(lines[3]) == {"SageMakerInput", "SageMakerOutput"}


def test_skip_existing_keeps_finished_outputs(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "in" / name).write_bytes(csv_body(ROWS))
    args = [str(tmp_path / "in"), "--output", str(tmp_path / "out")]
    assert _score(model_dir, *args).returncode == 0
    first = outputs(tmp_path / "out")
    (tmp_path / "out" / "a.csv.out").write_bytes(b"kept\n")
    (tmp_path / "out" / "b.csv.out").unlink()
    again = _score(model_dir, *args, "--skip-existing")
    assert again.returncode == 0, again.stderr
    assert "1 files scored" in again.stderr
    assert "1 already done" in again.stderr
    assert outputs(tmp_path / "out") == {"a.csv.out": b"kept\n", "b.csv.out": first["b.csv.out"]}


def test_standard_input_is_answered_on_standard_output(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_bytes(csv_body(ROWS))
    assert _score(model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path)).returncode == 0
    piped = subprocess.run(
        [str(SMSERVE), "score", "-", "--model-dir", str(model_dir), "--content-type", "text/csv"],
        input=csv_body(ROWS), capture_output=True, env=server_env(8080, {}), timeout=120,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "x.csv.out").read_bytes()


def test_a_record_over_the_payload_limit_fails_the_file(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_bytes(b",".join([b"1.0"] * 2000) + b"\n")
    result = _score(
        model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path / "out"),
        "--max-payload-mb", "0.001",
    )  # fmt: skip
    assert result.returncode == 1
    assert "record 1 (byte 0) is larger than the mini-batch limit" in result.stderr


def test_an_impossible_join_is_a_usage_error(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_bytes(csv_body(ROWS))
    result = _score(
        model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path / "out"),
        "--join-source", "Input", "--accept", "application/json",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--join-source Input joins text/csv input with text/csv output" in result.stderr
    assert not (tmp_path / "out").exists()


def test_ctrl_c_stops_cleanly_and_keeps_only_finished_outputs(
    model_dir: Path, tmp_path: Path
) -> None:
    """Standard input, named after the folder and left open, holds the job mid-way however
    fast the machine is: the parent reads it once b.csv is planned and before b.csv's last
    answers are written (a shard behind, in order), so a.csv.out is done, b.csv's output is
    open, and nothing can finish until the signal comes."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_bytes(csv_body(ROWS))
    (tmp_path / "in" / "b.csv").write_bytes(csv_body(np.tile(ROWS, (4, 1))))  # several shards
    command = [
        str(SMSERVE), "score", str(tmp_path / "in"), "-", "--output", str(tmp_path / "out"),
        "--model-dir", str(model_dir), "--content-type", "text/csv", "--workers", "1",
        "--max-payload-mb", "0.0005",
    ]  # fmt: skip
    with _waiting_for_input(command) as process:
        deadline = time.monotonic() + 120
        while not (tmp_path / "out" / "a.csv.out").exists():
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "a.csv was not scored within 120 s"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole group
        assert _exit_status(process) == 130
        assert b"interrupted" in process.stderr.read()
    assert list(outputs(tmp_path / "out")) == ["a.csv.out"]  # b.csv's unfinished one is gone


@contextlib.contextmanager
def _waiting_for_input(command: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` in a session of its own, its standard input open until the block ends (it
    waits for more), Python's fault handler on; stopped (SIGKILL to its group) and its pipes
    closed however the block ends, so a failure leaves no process or pipe to later tests."""
    env = server_env(8080, {"PYTHONFAULTHANDLER": "1"})
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # As from a terminal: SIGINT handled. A suite started in the background by a shell
        # without job control (`nohup ./run-tests &`) inherits SIGINT ignored, and so would
        # the command, which then never sees the test's Ctrl-C (60 s, then this test failed).
        preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL),
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def _exit_status(process: subprocess.Popen[bytes]) -> int:
    """The exit status within 60 s; else every thread's stack (SIGABRT to the group, which
    the fault handler prints) in the failure."""
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGABRT)
        process.wait(timeout=60)
        stacks = process.stderr.read().decode(errors="replace") if process.stderr else ""
        raise AssertionError(f"no exit 60 s after Ctrl-C; its threads:\n{stacks[-8000:]}") from None


def test_selectable_outputs_come_from_the_same_environment_as_the_endpoints(
    model_dir: Path, tmp_path: Path
) -> None:
    from smserve.config import Settings
    from smserve.http.app import create_app

    environ = {"SAGEMAKER_INFERENCE_OUTPUT": "predicted_label,probabilities"}
    (tmp_path / "x.csv").write_bytes(csv_body(ROWS))
    result = _score(model_dir, str(tmp_path / "x.csv"), "--output", str(tmp_path / "out"),
                    env=server_env(8080, environ))  # fmt: skip
    assert result.returncode == 0, result.stderr
    settings = Settings.from_env({**environ, "SAGEMAKER_BATCH": "true"})
    client = create_app(settings.replace(model_dir=model_dir)).test_client()
    response = client.post("/invocations", data=csv_body(ROWS), content_type="text/csv")
    assert response.status_code == 200
    assert (tmp_path / "out" / "x.csv.out").read_bytes() == response.data
    assert response.data.startswith(b'1,"[') or response.data[:2] in (b"0,", b"2,")
