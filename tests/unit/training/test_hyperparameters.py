from __future__ import annotations

import json
from pathlib import Path

import pytest

from smserve.training.failure import TrainingError
from smserve.training.hyperparameters import Hyperparameters


def test_strings_become_typed_values() -> None:
    hp = Hyperparameters({"k": "5", "eta": "0.3", "epochs": "10.0", "init": "KMeans++"})
    assert hp.required_integer("k", minimum=1) == 5
    assert hp.optional_number("eta", 0.0, 1.0) == pytest.approx(0.3)
    assert hp.integer("epochs", 1) == 10
    assert hp.optional_choice("init", ("random", "kmeans++")) == "kmeans++"


def test_defaults_apply_to_absent_and_empty_values() -> None:
    hp = Hyperparameters({"epochs": " "})
    assert hp.integer("epochs", 3) == 3
    assert hp.optional_number("eta") is None
    assert hp.text("objective") is None


@pytest.mark.parametrize(
    ("values", "read", "message"),
    [
        ({"k": "five"}, lambda hp: hp.required_integer("k"), "k='five' is not an integer"),
        ({"k": "2.5"}, lambda hp: hp.required_integer("k"), "k='2.5' is not an integer"),
        ({"k": "0"}, lambda hp: hp.required_integer("k", minimum=1), "k=0 must be at least 1"),
        ({}, lambda hp: hp.required_integer("k"), "hyperparameter k is required"),
        ({"eta": "fast"}, lambda hp: hp.optional_number("eta"), "eta='fast' is not a number"),
        ({"eta": "nan"}, lambda hp: hp.optional_number("eta"), "eta='nan' is not a number"),
        ({"eta": "2"}, lambda hp: hp.optional_number("eta", 0, 1), "eta=2.0 must be at most 1"),
        (
            {"device": "tpu"},
            lambda hp: hp.optional_choice("device", ("cpu", "cuda")),
            "device='tpu' must be one of: cpu, cuda",
        ),
        ({"m": "[1, 2]"}, lambda hp: hp.names("m"), "m='[1, 2]' is not a list of names"),
    ],
    ids=["word", "fraction", "below-min", "missing", "nan-word", "nan", "above", "choice", "list"],
)
def test_bad_values_name_the_key(values: dict[str, str], read: object, message: str) -> None:
    with pytest.raises(TrainingError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read(Hyperparameters(values))  # type: ignore[operator]


@pytest.mark.parametrize(
    "text", ['["msd", "ssd"]', "msd,ssd", "[msd, ssd]", " MSD , ssd ", "['msd','ssd']"]
)
def test_name_lists_accept_json_and_comma_forms(text: str) -> None:
    assert Hyperparameters({"eval_metrics": text}).names("eval_metrics") == ("msd", "ssd")


def test_single_name_is_a_one_element_list() -> None:
    assert Hyperparameters({"m": '"msd"'}).names("m") == ("msd",)
    assert Hyperparameters({"m": "msd"}).names("m") == ("msd",)


def test_unused_keys_are_reported_except_platform_keys() -> None:
    hp = Hyperparameters(
        {"k": "2", "colour": "red", "sagemaker_region": "x", "_tuning_objective_metric": "y"}
    )
    hp.required_integer("k")
    with pytest.raises(TrainingError, match="unknown hyperparameter.*kmeans: colour$"):
        hp.check_all_used("kmeans")


def test_ignored_keys_count_as_used() -> None:
    hp = Hyperparameters({"local_lloyd_tol": "0.1"})
    hp.ignore(["local_lloyd_tol", "extra_center_factor"])
    hp.check_all_used("kmeans")


def test_file_values_may_be_json_numbers_and_booleans(tmp_path: Path) -> None:
    path = tmp_path / "hyperparameters.json"
    path.write_text(json.dumps({"k": 3, "eta": 0.5, "flag": True}))
    hp = Hyperparameters.from_file(path)
    assert hp.required_integer("k") == 3
    assert hp.optional_number("eta") == 0.5
    assert hp.text("flag") == "true"


def test_missing_file_means_no_hyperparameters(tmp_path: Path) -> None:
    Hyperparameters.from_file(tmp_path / "absent.json").check_all_used("xgboost")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not a readable JSON"), ("[1]", "JSON object"), ('{"a": [1]}', "a must be")],
)
def test_malformed_file_is_a_training_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "hyperparameters.json"
    path.write_text(content)
    with pytest.raises(TrainingError, match=message):
        Hyperparameters.from_file(path)
