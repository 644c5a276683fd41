from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.codecs.csv import CsvCodec
from smserve.errors import DecodeError
from smserve.media import MediaType, parse_media_type
from smserve.training.channels import Channel
from smserve.training.data import read_channel
from smserve.training.failure import TrainingError

from .training_data import blobs, to_csv, to_libsvm, to_recordio


def channel(tmp_path: Path, files: dict[str, str | bytes], content_type: str) -> Channel:
    folder = tmp_path / "train"
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return Channel("train", folder, parse_media_type(content_type))


def test_csv_label_is_the_first_column(tmp_path: Path) -> None:
    features, labels = blobs(8, 3)
    dataset = read_channel(channel(tmp_path, {"a.csv": to_csv(features, labels)}, "text/csv"))
    assert dataset.features.dtype == np.float32
    assert dataset.features.flags.c_contiguous
    np.testing.assert_allclose(dataset.features, features, rtol=1e-5)
    np.testing.assert_array_equal(dataset.labels, labels)


def test_csv_label_size_zero_means_no_label(tmp_path: Path) -> None:
    features, _ = blobs(5, 2)
    files = {"a.csv": to_csv(features, None)}
    dataset = read_channel(channel(tmp_path, files, "text/csv; label_size=0"))
    assert dataset.labels is None
    np.testing.assert_allclose(dataset.features, features, rtol=1e-5)


def test_csv_empty_cells_are_missing_values(tmp_path: Path) -> None:
    dataset = read_channel(channel(tmp_path, {"a.csv": "1,2,,4\n0,5,6,7\n"}, "text/csv"))
    np.testing.assert_array_equal(dataset.features, [[2, np.nan, 4], [5, 6, 7]])


def test_csv_single_row_is_two_dimensional(tmp_path: Path) -> None:
    dataset = read_channel(channel(tmp_path, {"a.csv": "1,2,3"}, "text/csv"))
    assert dataset.features.shape == (1, 2)


def test_files_are_stacked_in_sorted_order_including_subfolders(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "b.csv": "2,20\n",
        "a.csv": "1,10\n",
        "sub/c.csv": "3,30\n",
        "empty.csv": "",
        ".hidden.csv": "9,90\n",
        ".cache/d.csv": "9,90\n",
    }
    dataset = read_channel(channel(tmp_path, files, "text/csv"))
    np.testing.assert_array_equal(dataset.labels, [1, 2, 3])
    np.testing.assert_array_equal(dataset.features, [[10], [20], [30]])


def test_libsvm_keeps_labels_and_stays_sparse(tmp_path: Path) -> None:
    features, labels = blobs(6, 3)
    features[0, 1] = 0.0
    text = to_libsvm(features, labels)
    dataset = read_channel(channel(tmp_path, {"a.libsvm": text}, "text/libsvm"))
    assert sp.issparse(dataset.features)
    assert dataset.features.dtype == np.float32
    np.testing.assert_allclose(dataset.features.toarray(), features, rtol=1e-5)
    np.testing.assert_array_equal(dataset.labels, labels)


def test_libsvm_files_of_different_widths_are_widened(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"a": "1 0:1.5\n", "b": "0 0:1 3:2\n"}
    dataset = read_channel(channel(tmp_path, files, "libsvm"))
    assert dataset.features.shape == (2, 4)
    np.testing.assert_array_equal(dataset.features.toarray(), [[1.5, 0, 0, 0], [1, 0, 0, 2]])


def test_libsvm_labels_may_be_signed_and_rows_may_have_qid(tmp_path: Path) -> None:
    text = "+1 qid:3 0:1 2:5\n\n-1\t1:2\r\n0.5 qid:1 0:7\n"
    dataset = read_channel(channel(tmp_path, {"a": text}, "text/libsvm"))
    np.testing.assert_array_equal(dataset.labels, [1.0, -1.0, 0.5])
    np.testing.assert_array_equal(dataset.features.toarray(), [[1, 0, 5], [0, 2, 0], [7, 0, 0]])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 0:1\n0:2 1:3\n", "line 2: the row has no label"),
        ("1 0:1\nyes 0:2\n", "line 2: the label 'yes' is not a number"),
        ("1 0:1 0:2\n", "line 1: '0:2': the index repeats"),
    ],
    ids=["no-label", "word-label", "repeat"],
)
def test_bad_libsvm_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TrainingError, match=f"a.libsvm is not valid libsvm: .*{message}"):
        read_channel(channel(tmp_path, {"a.libsvm": text}, "text/libsvm"))


def test_recordio_from_the_sdk_keeps_labels(tmp_path: Path) -> None:
    features, labels = blobs(7, 4)
    files: dict[str, str | bytes] = {"part-0": to_recordio(features[:3], labels[:3])}
    files["part-1"] = to_recordio(features[3:], labels[3:])
    dataset = read_channel(channel(tmp_path, files, "application/x-recordio-protobuf"))
    np.testing.assert_array_equal(dataset.features, features)
    np.testing.assert_array_equal(dataset.labels, labels)


def test_recordio_without_labels(tmp_path: Path) -> None:
    features, _ = blobs(4, 2)
    files: dict[str, str | bytes] = {"part-0": to_recordio(features, None)}
    dataset = read_channel(channel(tmp_path, files, "recordio-protobuf"))
    assert dataset.labels is None


@pytest.mark.parametrize(
    ("files", "content_type", "message"),
    [
        ({"a.csv": "1,x,3\n"}, "text/csv", r"a.csv is not numeric CSV: .*'x'"),
        ({"a.csv": "1,2\n1,2,3\n"}, "text/csv", "a.csv is not numeric CSV"),
        ({"a.csv": "1\n2\n"}, "text/csv", "no features"),
        ({"a.csv": b"\xff\xfe1,2"}, "text/csv", "cannot be read as UTF-8"),
        ({"a.csv": "1,2\n", "b.csv": "1,2,3\n"}, "text/csv", "b.csv has 2 features but a.csv"),
        ({"a.csv": ""}, "text/csv", "every file .* is empty"),
        ({"a.csv": "1,2\n"}, "text/csv; label_size=2", "label_size='2' is not supported"),
        ({"a.json": "{}"}, "application/json", "application/json' is not supported for training"),
        ({"a.rec": b"not recordio"}, "application/x-recordio-protobuf", "not valid RecordIO"),
    ],
    ids=["cell", "ragged", "label-only", "utf8", "widths", "empty", "label-size", "json", "rec"],
)
def test_unreadable_data_is_a_training_error(
    tmp_path: Path, files: dict[str, str | bytes], content_type: str, message: str
) -> None:
    with pytest.raises(TrainingError, match=message):
        read_channel(channel(tmp_path, files, content_type))


def test_missing_or_empty_folder_is_a_training_error(tmp_path: Path) -> None:
    with pytest.raises(TrainingError, match="does not exist"):
        read_channel(Channel("train", tmp_path / "absent", MediaType("text/csv")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainingError, match="holds no data files"):
        read_channel(Channel("train", tmp_path / "empty", MediaType("text/csv")))


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbf1, 2.5 ,3\r\n\r\n4,,nan\n-inf,1e3,7",  # BOM, CRLF, blank line, missing
        "\n".join(",".join(f"{v:.9g}" for v in row) for row in blobs(4000, 5)[0]).encode(),
    ],
    ids=["tolerant", "large"],
)
def test_csv_numbers_are_the_serving_codecs(tmp_path: Path, body: bytes) -> None:
    dataset = read_channel(channel(tmp_path, {"a.csv": body}, "text/csv; label_size=0"))
    served = CsvCodec().decode(body, MediaType("text/csv")).features
    np.testing.assert_array_equal(dataset.features, served)


@pytest.mark.parametrize("body", [b"1, ,3\n", b"1,2\n3,4,5\n", b"1,0x10\n"])
def test_csv_refusals_are_the_serving_codecs(tmp_path: Path, body: bytes) -> None:
    with pytest.raises(DecodeError) as served:
        CsvCodec().decode(body, MediaType("text/csv"))
    with pytest.raises(TrainingError) as trained:
        read_channel(channel(tmp_path, {"a.csv": body}, "text/csv"))
    assert str(trained.value).endswith(served.value.message)


READ_AND_REPORT = """
import json, sys
from pathlib import Path
from smserve.media import parse_media_type
from smserve.training.channels import Channel
from smserve.training.data import read_channel

FORMATS = ("google.protobuf", "pyarrow.csv", "pyarrow.compute")
loaded = {}
for folder, content_type in zip(sys.argv[1::2], sys.argv[2::2]):
    rows = read_channel(Channel("train", Path(folder), parse_media_type(content_type))).n_rows
    loaded[content_type] = [rows, [name for name in FORMATS if name in sys.modules]]
print(json.dumps(loaded))
"""


def test_a_job_imports_only_the_readers_of_the_formats_it_reads(tmp_path: Path) -> None:
    """A Parquet channel of float columns loads neither protobuf, Arrow's CSV reader nor its
    compute functions; the CSV and RecordIO channels read after it load theirs. A fresh
    interpreter, since this one has imported every codec already."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features, labels = blobs(6, 3)
    columns = {"label": labels, **{f"f{i}": features[:, i] for i in range(3)}}
    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.table(columns), tmp_path / "parquet" / "a.parquet")
    csv = channel(tmp_path / "csv", {"a.csv": to_csv(features, labels)}, "text/csv").path
    rec = {"a.rec": to_recordio(features, labels)}
    recordio = channel(tmp_path / "rec", rec, "application/x-recordio-protobuf").path
    arguments = [str(tmp_path / "parquet"), "application/x-parquet", str(csv), "text/csv"]
    arguments += [str(recordio), "application/x-recordio-protobuf"]
    done = subprocess.run(
        [sys.executable, "-c", READ_AND_REPORT, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "application/x-parquet": [6, []],
        "text/csv": [6, ["pyarrow.csv"]],
        "application/x-recordio-protobuf": [6, ["google.protobuf", "pyarrow.csv"]],
    }
