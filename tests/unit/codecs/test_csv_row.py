"""The one-row CSV parser against numpy's: the same float32 bits, or no answer at all."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.codecs.csv import CsvCodec
from smserve.codecs.csv_row import parse_row
from smserve.codecs.text import load_numbers
from smserve.media import CSV, MediaType


def numpy_row(body: bytes) -> np.ndarray:
    return load_numbers(body.decode(), ",", np.float32)


def random_fields(rng: np.random.Generator, count: int) -> list[str]:
    """Number text as clients write it, and text whose value sits at float32's rounding edges
    (a midpoint between two float32s, written with extra digits either side)."""
    fields = []
    for kind in rng.integers(0, 7, size=count):
        value = rng.normal() * 10.0 ** int(rng.integers(-12, 12))
        if kind == 0:
            fields.append(repr(value))
        elif kind == 1:
            fields.append(f"{value:.17g}")
        elif kind == 2:
            fields.append(str(int(rng.integers(-(10**9), 10**9))))
        elif kind == 3:
            fields.append(f"{value:.9e}")
        elif kind == 4:
            low = np.float32(value)
            high = np.nextafter(low, np.float32(np.inf))
            middle = (np.float64(low) + np.float64(high)) / 2
            fields.append(f"{middle:.25g}" + ["", "1", "0000001", "9999"][int(rng.integers(0, 4))])
        elif kind == 5:
            fields.append(f"{value * 1e-30:.45f}")
        else:
            fields.append(f"{value:E}")
    return fields


def test_random_and_rounding_edge_text_parses_to_numpys_bits() -> None:
    rng = np.random.default_rng(25)
    for _ in range(400):
        body = ",".join(random_fields(rng, 50)).encode() + b"\n"
        row = parse_row(body)
        assert row is not None
        assert row.dtype == np.float32
        assert row.shape == (1, 50)
        assert np.array_equal(row.view(np.uint32), numpy_row(body).view(np.uint32))


@pytest.mark.parametrize(
    "body",
    [b"1,2,3", b"1,2,3\n", b"1,2,3\r\n", b" 1 , -2.5e-3 ,3E+2\n", b"0,-0.0,1e300,-1e-400\n"],
)
def test_plain_rows_parse_as_numpy_parses_them(body: bytes) -> None:
    row = parse_row(body)
    assert row is not None
    assert np.array_equal(row.view(np.uint32), numpy_row(body).view(np.uint32))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\n",
        b" \n",
        b"1,2\n3,4\n",  # two lines
        b"-0,1\n",  # JSON drops an integer zero's sign
        b"1,-0\n",
        b"nan,1\n",
        b"inf,1\n",
        b"1,,2\n",
        b"1,2,\n",
        b"+1,2\n",
        b".5,2\n",
        b"5.,2\n",
        b"01,2\n",
        b"1 2\n",
        b'"1",2\n',
        b"\xef\xbb\xbf1,2\n",  # a byte-order mark
        b"true,1\n",
        b"1," * 5000 + b"1\n",  # longer than the short path takes
    ],
)
def test_anything_else_is_left_to_numpys_parser(body: bytes) -> None:
    assert parse_row(body) is None


@pytest.mark.parametrize("body", [b"-0,1.5\n", b"1,,2\n", b"01,.5,5.\n", b"0.25,-1e-3,7\n"])
def test_the_codec_gives_the_same_rows_either_way(body: bytes) -> None:
    batch = CsvCodec().decode(body, MediaType(CSV))
    text = body.decode().replace(",,", ",nan,")
    assert np.array_equal(batch.features, numpy_row(text.encode()), equal_nan=True)
    if body == b"-0,1.5\n":
        assert np.signbit(batch.features[0, 0])  # numpy's parser kept the sign
