"""The command line's usage and exit statuses, for the paths that never start a server (the
serving paths are tested end to end in tests/process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smserve.cli import main, serve_main
from tests.process.servers import free_port


def a_training_job(base: Path) -> None:
    """A tiny XGBoost job in SageMaker's layout under ``base``."""
    (base / "input/config").mkdir(parents=True)
    (base / "input/config/hyperparameters.json").write_text('{"num_round": "2"}')
    (base / "input/data/train").mkdir(parents=True)
    (base / "input/data/train/a.libsvm").write_text("1 0:1 1:2\n0 0:2 1:1\n1 0:1 1:3\n")


def test_no_command_outside_a_training_job_prints_usage_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SMSERVE_TRAINING_BASE_DIR", str(tmp_path))
    monkeypatch.delenv("SM_INPUT_CONFIG_DIR", raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: smserve" in err
    assert "a command is needed (no training job here" in err


def test_no_command_inside_a_training_job_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the SageMaker SDK v3's ModelTrainer runs: the image with no command.
    a_training_job(tmp_path)
    for name in ("SM_INPUT_CONFIG_DIR", "SM_MODEL_DIR", "SM_OUTPUT_DIR", "SM_CHANNEL_TRAIN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SMSERVE_TRAINING_BASE_DIR", str(tmp_path))
    assert main([]) == 0
    assert "no command;" in capsys.readouterr().err
    assert (tmp_path / "model" / "xgboost-model").is_file()


def test_a_training_job_freezes_what_it_imported_and_never_imports_multiprocessing(
    tmp_path: Path,
) -> None:
    # The process is the job: its imports out of the cyclic collector's reach (its collections
    # at exit skip them). A fresh interpreter: this one has frozen and imported all of it.
    a_training_job(tmp_path)
    code = (
        "import gc, sys; from smserve.cli import main; status = main(['train']); "
        "print(status, gc.get_freeze_count(), 'multiprocessing' in sys.modules)"
    )
    environ = {"PATH": os.environ["PATH"], "SMSERVE_TRAINING_BASE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120
    )
    status, frozen, multiprocessing = done.stdout.splitlines()[-1].split()  # after the logs
    assert (status, multiprocessing) == ("0", "False"), done.stderr
    assert int(frozen) > 10_000  # the objects of numpy, scipy, pyarrow, smserve ...
    assert (tmp_path / "model" / "xgboost-model").is_file()


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["train", "--help"]])
def test_help_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    assert "usage: smserve" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["serve", "--port", "0"], ["serve", "--workers", "many"], ["serve", "--demo", "svm"], ["x"]],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "usage: smserve" in capsys.readouterr().err


def test_bad_setting_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAGEMAKER_BIND_TO_PORT", "http")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.startswith(
        "smserve: invalid configuration: SAGEMAKER_BIND_TO_PORT='http'"
    )


def test_serve_executable_is_smserve_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["serve", "--help"])
    with pytest.raises(SystemExit) as stop:
        serve_main()
    assert stop.value.code == 0
    assert "usage: smserve serve" in capsys.readouterr().out


def test_model_config_file_flag_is_read_and_checked_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "m" base_path: "/x" bogus: 1 } }\n')
    # Ports of its own: 8080 or 8081 held by another server on a busy machine would stop the
    # serve before the config is read (a FrontEndError, or a worker whose gRPC port is taken).
    monkeypatch.setenv("SAGEMAKER_BIND_TO_PORT", str(free_port()))
    monkeypatch.setenv("SMSERVE_GRPC_PORT", "0")
    assert main(["serve", "--model_config_file", str(config)]) == 2
    error = capsys.readouterr().err
    assert str(config) in error
    assert "unsupported field(s) bogus" in error
