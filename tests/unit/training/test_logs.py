from __future__ import annotations

import logging

import pytest

from smserve.training.logs import format_final_score, format_scores, metrics, training_logging


def test_round_line_uses_the_cloudwatch_tab_escape() -> None:
    line = format_scores(3, {"train-rmse": 0.41, "validation-rmse": 0.4712345})
    assert line == "[3]#011train-rmse:0.41000#011validation-rmse:0.47123"


def test_final_score_line() -> None:
    assert format_final_score("train", "msd", 0.25) == "#train_score (algo-1) : ('msd', 0.25)"


def test_metric_lines_are_bare_and_other_records_are_stamped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with training_logging("info"):
        metrics.info("[0]#011train-msd:1.00000")
        logging.getLogger("smserve.training.x").info("hello")
        logging.getLogger("smserve.training.x").debug("hidden")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[0]#011train-msd:1.00000"
    assert lines[1].endswith("INFO smserve.training.x: hello")
    assert len(lines) == 2
    assert not logging.getLogger("smserve").handlers  # removed after the run
