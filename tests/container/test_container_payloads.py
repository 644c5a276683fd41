"""The committed local_test payloads against their generator and the SageMaker SDK's RecordIO
writer, which also checks the endpoint checker's own RecordIO reader."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tests.container.container_modules import LOCAL_TEST, load

# Imported at collection, as the other SDK tests do; make_test_data imports it again lazily.
common = pytest.importorskip("sagemaker.amazon.common")

pytestmark = pytest.mark.sdk


def test_committed_payloads_match_the_generator() -> None:
    make = load(LOCAL_TEST / "make_test_data.py")
    expected = {"dense.csv": make.csv_text(make.PAYLOAD_ROWS)}
    expected["sparse.libsvm"] = make.libsvm_text(make.PAYLOAD_ROWS)
    expected.update(make.json_payloads(make.PAYLOAD_ROWS))
    for name, text in expected.items():
        assert (LOCAL_TEST / "payloads" / name).read_text() == text, name
    for name, data in make.recordio_payloads(make.PAYLOAD_ROWS).items():
        assert (LOCAL_TEST / "payloads" / name).read_bytes() == data, name
    train = LOCAL_TEST / "test_dir/input/data/train/train.csv"
    assert train.read_text() == make.csv_text(make.training_rows())


def test_endpoint_checker_decodes_sdk_recordio() -> None:
    check = load(LOCAL_TEST / "check_endpoint.py")
    buffer = io.BytesIO()
    common.write_numpy_to_dense_tensor(
        buffer, np.ones((3, 2), np.float32), np.array([0.25, 1.0, -3.0])
    )
    assert check.decode_recordio(buffer.getvalue(), []) == [
        {"values": [0.25]},
        {"values": [1.0]},
        {"values": [-3.0]},
    ]
