from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb

from smserve.training.hyperparameters import Hyperparameters
from smserve.training.xgboost import XGBoostConfig

from .training_data import TrainingJob, blobs, quarter_steps, to_csv, to_libsvm, to_recordio

METRIC_LINE = re.compile(r"^\[(\d+)\]((?:#011[a-z]+-[a-z@0-9]+:-?\d+\.\d{5})+)$", re.MULTILINE)


def booster(job: TrainingJob) -> xgb.Booster:
    # From bytes: a path without an extension makes XGBoost warn that it guesses the format.
    model = xgb.Booster()
    model.load_model(bytearray((job.model_dir / "xgboost-model").read_bytes()))
    return model


def test_regression_on_csv_writes_a_json_model_that_predicts(
    job: TrainingJob, capsys: pytest.CaptureFixture[str]
) -> None:
    features, _ = blobs(80, 3)
    target = features[:, 0] * 2.0
    job.hyperparameters(num_round="5", max_depth="3", eta="0.5")
    job.channel("train", {"a.csv": to_csv(features, target)}, "text/csv")
    assert job.run() == 0
    path = job.model_dir / "xgboost-model"
    assert json.loads(path.read_bytes())["learner"]["objective"]["name"] == "reg:squarederror"
    model = booster(job)
    assert model.num_boosted_rounds() == 5
    assert model.num_features() == 3
    prediction = model.inplace_predict(features)
    assert np.corrcoef(prediction, target)[0, 1] > 0.9
    lines = METRIC_LINE.findall(capsys.readouterr().out)
    assert [int(n) for n, _ in lines] == [0, 1, 2, 3, 4]
    assert all(fields.startswith("#011train-rmse:") for _, fields in lines)
    assert not any(p.name.startswith(".") for p in job.model_dir.iterdir())


def test_binary_on_libsvm_by_default(job: TrainingJob) -> None:
    features, labels = blobs(60, 3)
    job.hyperparameters(num_round="3", objective="binary:logistic", eval_metric="auc,logloss")
    job.channel("train", {"a.libsvm": to_libsvm(features, (labels > 0).astype(np.float32))})
    assert job.run() == 0
    prediction = booster(job).inplace_predict(features)
    assert ((prediction > 0.5) == (labels > 0)).mean() > 0.9


def test_multiclass_on_recordio_logs_validation(
    job: TrainingJob, capsys: pytest.CaptureFixture[str]
) -> None:
    features, labels = blobs(90, 3)
    job.hyperparameters(num_round="4", objective="multi:softprob", num_class="3", seed="7")
    job.channel("train", {"p0": to_recordio(features[:60], labels[:60])}, "recordio-protobuf")
    job.channel("validation", {"p0": to_recordio(features[60:], labels[60:])}, "recordio-protobuf")
    assert job.run() == 0
    probabilities = booster(job).inplace_predict(features[60:])
    assert probabilities.shape == (30, 3)
    assert (probabilities.argmax(1) == labels[60:]).mean() > 0.9
    out = capsys.readouterr().out
    assert re.search(r"^\[3\]#011train-mlogloss:[\d.]+#011validation-mlogloss:[\d.]+$", out, re.M)


def test_early_stopping_keeps_the_best_round(job: TrainingJob) -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(120, 2)).astype(np.float32)
    labels = (rng.random(120) > 0.5).astype(np.float32)  # pure noise: validation gets worse
    job.hyperparameters(
        num_round="200", objective="binary:logistic", eta="1", max_depth="6",
        early_stopping_rounds="3", eval_metric="logloss",
    )  # fmt: skip
    job.channel("train", {"a.csv": to_csv(features[:80], labels[:80])}, "text/csv")
    job.channel("validation", {"a.csv": to_csv(features[80:], labels[80:])}, "text/csv")
    assert job.run() == 0
    model = booster(job)
    best = int(model.attr("best_iteration") or -1)
    assert 0 <= best < 200
    assert model.num_boosted_rounds() == best + 1
    assert model.attr("best_score") is not None


@pytest.mark.parametrize(("write", "content_type"), [(to_csv, "text/csv"), (to_libsvm, None)])
@pytest.mark.parametrize("tree_method", [None, "auto", "hist", "approx", "exact"])
def test_every_tree_method_trains_the_model_xgboost_trains_from_a_dmatrix(
    job: TrainingJob, write: Callable[..., str], content_type: str | None, tree_method: str | None
) -> None:
    """hist trains from a QuantileDMatrix (the validation set on the training set's bins);
    the model saved, byte for byte as XGBoost's JSON, with its rounds and early stopping, is
    XGBoost's own from a DMatrix of the same rows, as for exact and approx."""
    (train_x, train_y), (valid_x, valid_y) = quarter_steps(400, 1), quarter_steps(150, 2)
    params = {
        "objective": "binary:logistic", "max_depth": "4", "eta": "0.3", "max_bin": "16",
        "seed": "3", "eval_metric": "logloss",
        **({"tree_method": tree_method} if tree_method else {}),
    }  # fmt: skip
    job.hyperparameters(num_round="60", early_stopping_rounds="4", **params)
    job.channel("train", {"a": write(train_x, train_y)}, content_type)
    job.channel("validation", {"a": write(valid_x, valid_y)}, content_type)
    assert job.run() == 0
    make = (lambda x: sp.csr_matrix(x)) if write is to_libsvm else (lambda x: x)
    train = xgb.DMatrix(make(train_x), label=train_y)
    reference = xgb.train(
        {**params, "device": "cpu"},
        train,
        num_boost_round=60,
        evals=[(train, "train"), (xgb.DMatrix(make(valid_x), label=valid_y), "validation")],
        callbacks=[xgb.callback.EarlyStopping(rounds=4, data_name="validation", save_best=True)],
        verbose_eval=False,
    )
    model = booster(job)
    assert model.num_boosted_rounds() == reference.num_boosted_rounds() < 60
    assert model.attr("best_iteration") == reference.attr("best_iteration")
    rows = np.vstack([train_x, valid_x])
    np.testing.assert_array_equal(model.inplace_predict(rows), reference.inplace_predict(rows))
    assert model.save_raw("json") == reference.save_raw("json")


def test_hyperparameters_become_xgboost_params() -> None:
    hp = Hyperparameters(
        {"num_round": "10", "eta": "0.1", "max_depth": "4", "eval_metric": '["rmse","mae"]',
         "tree_method": "gpu_hist", "lambda": "2", "_tuning_objective_metric": "x"}
    )  # fmt: skip
    config = XGBoostConfig.from_hyperparameters(hp)
    hp.check_all_used("xgboost")
    assert config.num_round == 10
    assert config.early_stopping_rounds is None
    assert config.params == {
        "objective": "reg:squarederror", "device": "cuda", "tree_method": "hist",
        "eta": 0.1, "max_depth": 4, "lambda": 2.0, "eval_metric": ["rmse", "mae"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("hyperparameters", "message"),
    [
        ({}, "hyperparameter num_round is required"),
        ({"num_round": "many"}, "num_round='many' is not an integer"),
        ({"num_round": "2", "eta": "-1"}, "eta=-1.0 must be at least 0.0"),
        ({"num_round": "2", "max_depht": "3"}, "unknown hyperparameter.*xgboost: max_depht"),
        ({"num_round": "2", "objective": "reg:nope"}, "XGBoost rejected.*Unknown objective"),
        ({"num_round": "2", "objective": "multi:softmax"}, "XGBoost rejected.*num_class"),
        ({"num_round": "2", "early_stopping_rounds": "2"}, "needs a 'validation' channel"),
        ({"num_round": "2", "algorithm": "forest"}, "algorithm='forest' must be one of"),
    ],
    ids=["no-rounds", "rounds", "eta", "typo", "objective", "num-class", "early-stop", "algo"],
)
def test_bad_jobs_fail_with_a_reason(
    job: TrainingJob, hyperparameters: dict[str, str], message: str
) -> None:
    features, labels = blobs(20, 2)
    job.hyperparameters(**hyperparameters)
    job.channel("train", {"a.csv": to_csv(features, labels)}, "text/csv")
    assert job.run() == 1
    assert re.search(message, job.failure), job.failure
    assert not (job.model_dir / "xgboost-model").exists()


def test_data_without_labels_fails(job: TrainingJob) -> None:
    features, _ = blobs(10, 2)
    job.hyperparameters(num_round="2")
    job.channel("train", {"p": to_recordio(features, None)}, "application/x-recordio-protobuf")
    assert job.run() == 1
    assert "channel 'train' has no labels" in job.failure


def test_missing_label_fails(job: TrainingJob) -> None:
    job.hyperparameters(num_round="2")
    job.channel("train", {"a.csv": "1,2\n,3\n"}, "text/csv")
    assert job.run() == 1
    assert "channel 'train': row 2 has no numeric label" in job.failure


def test_validation_width_must_match_for_dense_data(job: TrainingJob) -> None:
    job.hyperparameters(num_round="2")
    job.channel("train", {"a.csv": "1,2,3\n0,1,1\n"}, "text/csv")
    job.channel("validation", {"a.csv": "1,2\n"}, "text/csv")
    assert job.run() == 1
    assert "'validation' has 1 features, expected 2" in job.failure


@pytest.mark.parametrize(
    ("content", "content_type", "where"),
    [
        ("1,2,3\n0,4,1e39\n", "text/csv", "row 2, feature 2"),
        ("1 0:1 4:2\n0 3:-inf\n", "text/libsvm", "row 2, feature 4"),
    ],
    ids=["csv-beyond-float32", "libsvm-minus-infinity"],
)
def test_an_infinite_feature_fails_naming_its_row(
    job: TrainingJob, content: str, content_type: str, where: str
) -> None:
    """XGBoost itself stops at an infinity with a stack trace (exit 2 before); a NaN or a
    value left out is missing, and trains."""
    job.hyperparameters(num_round="2")
    job.channel("train", {"a": content}, content_type)
    assert job.run() == 1
    assert job.failure.startswith(f"channel 'train': {where} (the label not counted): ")
    assert "infinite" in job.failure


TRAIN_COMMAND = "import sys; from smserve.cli import main; sys.exit(main())"


def test_what_xgboost_refuses_while_building_its_matrix_is_a_failed_job(tmp_path: Path) -> None:
    """A libsvm index of 2,000,000,000 asks XGBoost for a quantile sketch per feature: under a
    6 GiB address-space limit it fails with std::bad_alloc while building the QuantileDMatrix,
    which is the job's failure (exit 1) with XGBoost's reason, not an unexpected error."""
    job = TrainingJob(tmp_path)
    job.hyperparameters(num_round="2", objective="binary:logistic")
    job.channel("train", {"a.libsvm": "1 0:1 2000000000:1\n0 0:2 5:1\n"}, "text/libsvm")
    limit = 6 << 30
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from smserve.cli import main; sys.exit(main())",
            "train",
        ],
        env={**os.environ, "SMSERVE_TRAINING_BASE_DIR": str(tmp_path), "OMP_NUM_THREADS": "1"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert job.failure.startswith("XGBoost rejected the job: "), job.failure
