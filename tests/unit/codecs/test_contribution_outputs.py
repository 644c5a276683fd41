"""Contribution outputs in every response format: JSON and JSON Lines (a list per row, a list
of lists per class), CSV (columns after the other outputs) and RecordIO (a float32 tensor)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from smserve.codecs.csv import CsvCodec
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.codecs.recordio.codec import RecordioCodec
from smserve.codecs.recordio.framing import read_payloads
from smserve.codecs.recordio.schema import Record
from smserve.types import Prediction

LABELS = np.array([1, 0], dtype=np.int64)
BINARY = np.array([[0.25, -0.5, 1.0], [0.0, 0.125, -2.0]], dtype=np.float32)  # (n, F + 1)
MULTI = np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 4  # (n, classes, F + 1)
PROBABILITIES = np.array([[0.25, 0.75], [0.5, 0.5]], dtype=np.float32)


def _prediction(contributions: np.ndarray) -> Prediction:
    outputs = {
        "predicted_label": LABELS,
        "contributions": contributions,
        "probabilities": PROBABILITIES,
    }
    return Prediction(outputs, columns=("contributions",))


@pytest.mark.parametrize("contributions", [BINARY, MULTI], ids=["binary", "multiclass"])
def test_json_writes_a_list_per_row_and_a_list_of_lists_per_class(
    contributions: np.ndarray,
) -> None:
    body = json.loads(JsonCodec().encode(_prediction(contributions)))
    rows = body["predictions"]
    assert [row["contributions"] for row in rows] == contributions.tolist()
    assert list(rows[0]) == ["predicted_label", "contributions", "probabilities"]


@pytest.mark.parametrize("contributions", [BINARY, MULTI], ids=["binary", "multiclass"])
def test_json_lines_write_one_object_per_row(contributions: np.ndarray) -> None:
    lines = JsonLinesCodec().encode(_prediction(contributions)).decode().splitlines()
    assert [json.loads(line)["contributions"] for line in lines] == contributions.tolist()


def test_batch_mode_json_keeps_one_line_per_record() -> None:
    lines = JsonCodec(one_per_line=True).encode(_prediction(MULTI)).splitlines()
    assert [json.loads(line)["contributions"] for line in lines] == MULTI.tolist()


@pytest.mark.parametrize("contributions", [BINARY, MULTI], ids=["binary", "multiclass"])
def test_csv_appends_one_column_per_value_after_the_other_outputs(
    contributions: np.ndarray,
) -> None:
    text = CsvCodec().encode(_prediction(contributions)).decode()
    rows = list(csv.reader(io.StringIO(text)))
    for row, label, probabilities, values in zip(
        rows, LABELS, PROBABILITIES, contributions, strict=True
    ):
        assert row[0] == str(label)
        assert row[1] == repr([float(p) for p in probabilities])
        assert [float(cell) for cell in row[2:]] == values.reshape(-1).tolist()


def test_csv_with_contributions_alone_is_plain_columns() -> None:
    prediction = Prediction({"contributions": MULTI}, columns=("contributions",))
    assert (
        CsvCodec().encode(prediction) == b"0.0,0.25,0.5,0.75,1.0,1.25\n1.5,1.75,2.0,2.25,2.5,2.75\n"
    )


def test_csv_writes_several_column_outputs_in_the_order_named() -> None:
    prediction = Prediction(
        {"approximate_contributions": BINARY + 1, "score": LABELS, "contributions": BINARY},
        columns=("approximate_contributions", "contributions"),
    )
    first = CsvCodec().encode(prediction).decode().splitlines()[0].split(",")
    assert first == ["1", "1.25", "0.5", "2.0", "0.25", "-0.5", "1.0"]


def test_csv_without_column_outputs_is_unchanged() -> None:
    prediction = Prediction({"predicted_label": LABELS, "probabilities": PROBABILITIES})
    assert CsvCodec().encode(prediction) == b'1,"[0.25, 0.75]"\n0,"[0.5, 0.5]"\n'


@pytest.mark.parametrize("contributions", [BINARY, MULTI], ids=["binary", "multiclass"])
def test_recordio_writes_a_float32_label_tensor_per_key(contributions: np.ndarray) -> None:
    body = RecordioCodec().encode(_prediction(contributions))
    records = [Record.FromString(payload.parts[0]) for payload in read_payloads(body)]
    assert len(records) == 2
    for record, label, values in zip(records, LABELS, contributions, strict=True):
        tensor = record.label["contributions"].float32_tensor
        np.testing.assert_array_equal(np.array(tensor.values, np.float32), values.reshape(-1))
        assert list(record.label["predicted_label"].float32_tensor.values) == [float(label)]


def _wide(rows: int = 40, width: int = 51) -> np.ndarray:
    """Contributions-like values with the ones orjson writes unlike repr: tiny, NaN, inf."""
    rng = np.random.default_rng(5)
    values = rng.normal(size=(rows, width)) * rng.choice([1.0, 1e-6, 0.0], size=(rows, width))
    values[3, 7], values[9, 0], values[11, 50] = np.nan, np.inf, -3e-9
    return values.astype(np.float32)


def test_csv_wide_columns_are_written_as_repr_writes_them() -> None:
    wide = _wide()
    prediction = Prediction({"contributions": wide}, columns=("contributions",))
    expected = "".join(
        ",".join(repr(float(v)) for v in row) + "\n" for row in wide.astype(np.float64)
    )
    assert CsvCodec().encode(prediction).decode() == expected


@pytest.mark.parametrize("shape", [(40, 51), (8, 3, 17), (1, 2, 51)])
def test_json_wide_lists_hold_every_value_with_null_for_nan_and_inf(
    shape: tuple[int, ...],
) -> None:
    wide = _wide().reshape(-1)[: int(np.prod(shape))].reshape(shape)
    body = json.loads(JsonCodec().encode(Prediction({"contributions": wide})))
    expected = np.where(np.isfinite(wide), wide.astype(np.float64), np.nan)
    got = np.array(
        [row["contributions"] for row in body["predictions"]], dtype=np.float64
    )  # null -> nan
    np.testing.assert_array_equal(got, expected)
