"""The MXNet NDArray file reader/writer, checked against files built here byte by byte from
the published layout (independently of the writer under test)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.ndarray import read_ndarray_file, write_ndarray_file
from smserve.errors import ModelLoadError

CENTROIDS = np.array(
    [[0, 0, 0, 0], [10, 10, 10, 10], [1.5, 16, 14, 23]],
    dtype=np.float32,
)
# The worked example: these centroids saved by mxnet as an unnamed float32 list.
EXAMPLE = (
    bytes.fromhex(
        "12010000 00000000 00000000 00000000 01000000 00000000 c9fa93f9 00000000"
        "02000000 03000000 00000000 04000000 00000000 01000000 00000000 00000000"
    )
    + CENTROIDS.astype("<f4").tobytes()
    + bytes(8)
)

MAGICS = {"v1": 0xF993FAC8, "v2": 0xF993FAC9, "v3": 0xF993FACA}
FLAGS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}


def array_header(array: np.ndarray, version: str, stype: int = 0) -> bytes:
    """One array's bytes up to its data, in the given format version."""
    if version == "legacy":
        shape = struct.pack("<I", array.ndim) + struct.pack(f"<{array.ndim}I", *array.shape)
    else:
        shape = struct.pack("<i", array.ndim) + struct.pack(f"<{array.ndim}q", *array.shape)
        if version != "v1":
            shape = struct.pack("<i", stype) + shape
        shape = struct.pack("<I", MAGICS[version]) + shape
    gpu_context = struct.pack("<ii", 2, 0)  # readers must ignore the device
    return shape + gpu_context + struct.pack("<i", FLAGS[array.dtype])


def ndarray_file(
    array: np.ndarray,
    version: str = "v2",
    names: list[str] | None = None,
    count: int = 1,
    stype: int = 0,
) -> bytes:
    data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    body = array_header(array, version, stype) + data
    names = names or []
    tail = struct.pack("<Q", len(names)) + b"".join(
        struct.pack("<Q", len(n)) + n.encode() for n in names
    )
    return struct.pack("<QQQ", 0x112, 0, count) + body + tail


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "model_algo-1"
    path.write_bytes(data)
    return path


def test_writer_produces_the_documented_example(tmp_path: Path) -> None:
    write_ndarray_file(tmp_path / "model_algo-1", CENTROIDS)
    assert (tmp_path / "model_algo-1").read_bytes() == EXAMPLE
    assert len(EXAMPLE) == 120


def test_reader_reads_the_documented_example(tmp_path: Path) -> None:
    array = read_ndarray_file(write(tmp_path, EXAMPLE))
    np.testing.assert_array_equal(array, CENTROIDS)
    assert array.dtype == np.float32


@pytest.mark.parametrize("version", ["v1", "v2", "v3", "legacy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("names", [None, ["centroids"]], ids=["list", "named"])
def test_reads_every_variant(
    tmp_path: Path, version: str, dtype: type, names: list[str] | None
) -> None:
    centroids = CENTROIDS.astype(dtype)
    array = read_ndarray_file(write(tmp_path, ndarray_file(centroids, version, names)))
    np.testing.assert_array_equal(array, centroids)
    assert array.dtype == dtype
    assert array.flags.writeable


def test_float64_named_example_layout(tmp_path: Path) -> None:
    write_ndarray_file(tmp_path / "m", CENTROIDS.astype(np.float64), name="centroids")
    data = (tmp_path / "m").read_bytes()
    assert data[60:64] == bytes.fromhex("01000000")  # type flag f64
    assert data.endswith(bytes.fromhex("0100000000000000 0900000000000000") + b"centroids")
    assert len(data) == 64 + 96 + 8 + 8 + 9
    expected = ndarray_file(CENTROIDS.astype(np.float64), "v2", ["centroids"])
    assert data[:52] + data[60:] == expected[:52] + expected[60:]  # all but the context


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_round_trip(tmp_path: Path, dtype: type) -> None:
    array = np.arange(12, dtype=dtype).reshape(3, 4)
    write_ndarray_file(tmp_path / "m", array)
    np.testing.assert_array_equal(read_ndarray_file(tmp_path / "m"), array)


def test_writer_refuses_unsupported_dtype(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dtype"):
        write_ndarray_file(tmp_path / "m", np.zeros((2, 2), dtype=np.complex64))


def corrupt(name: str) -> bytes:
    f32 = CENTROIDS
    cases = {
        "empty": b"",
        "bad header": struct.pack("<Q", 0x113) + EXAMPLE[8:],
        "zero arrays": struct.pack("<QQQQ", 0x112, 0, 0, 0),
        "two arrays": ndarray_file(f32, count=2),
        "row_sparse": ndarray_file(f32, stype=1),
        "csr": ndarray_file(f32, stype=2),
        "truncated data": EXAMPLE[:100],
        "truncated header": EXAMPLE[:40],
        "no name count": EXAMPLE[:-8],
        "trailing bytes": EXAMPLE + b"\x00",
        "two names": ndarray_file(f32, names=["a", "b"]),
        "dtype flag 9": EXAMPLE[:60] + struct.pack("<i", 9) + EXAMPLE[64:],
        "garbage magic": EXAMPLE[:24] + struct.pack("<I", 0xDEADBEEF) + EXAMPLE[28:],
        "negative dim": EXAMPLE[:36] + struct.pack("<q", -3) + EXAMPLE[44:],
        "shapeless": EXAMPLE[:32] + struct.pack("<i", 0) + EXAMPLE[52:],
    }
    return cases[name]


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("empty", "truncated"),
        ("bad header", "not an MXNet NDArray file"),
        ("zero arrays", "holds 0 arrays"),
        ("two arrays", "holds 2 arrays"),
        ("row_sparse", "row_sparse"),
        ("csr", "csr"),
        ("truncated data", "truncated"),
        ("truncated header", "truncated"),
        ("no name count", "truncated"),
        ("trailing bytes", "unexpected bytes"),
        ("two names", "2 names"),
        ("dtype flag 9", "dtype flag 9"),
        ("garbage magic", "magic"),
        ("negative dim", "negative"),
        ("shapeless", "shapeless"),
    ],
)
def test_corrupted_files_are_refused(tmp_path: Path, case: str, reason: str) -> None:
    path = write(tmp_path, corrupt(case))
    with pytest.raises(ModelLoadError, match=reason) as info:
        read_ndarray_file(path)
    assert str(path) in str(info.value)


def test_missing_file_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="cannot read"):
        read_ndarray_file(tmp_path / "absent")
