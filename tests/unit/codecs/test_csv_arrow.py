"""Big CSV bodies go through Arrow's reader with exactly the numpy path's results and errors:
the same body cut into pieces below ARROW_MIN_BYTES (numpy) must decode to the same rows."""

from __future__ import annotations

import numpy as np
import pytest

from smserve.codecs.csv import CsvCodec
from smserve.codecs.csv_arrow import ARROW_MIN_BYTES, parse_large
from smserve.errors import DecodeError
from smserve.media import CSV, MediaType

CODEC = CsvCodec()


def decode(body: bytes) -> np.ndarray:
    return np.asarray(CODEC.decode(body, MediaType(CSV)).features)


def big(line: bytes, newline: bytes = b"\n") -> bytes:
    """``line`` repeated until the body is over the Arrow threshold."""
    return newline.join([line] * (ARROW_MIN_BYTES // len(line) + 2)) + newline


def by_numpy(body: bytes) -> np.ndarray:
    """The body decoded in line-aligned pieces small enough for the numpy path."""
    lines = body.split(b"\n")
    pieces = 4 * len(body) // ARROW_MIN_BYTES + 1
    step = len(lines) // pieces + 1
    parts = [b"\n".join(lines[i : i + step]) for i in range(0, len(lines), step)]
    assert all(len(part) < ARROW_MIN_BYTES for part in parts)
    return np.vstack([decode(part) for part in parts if part.strip()])


def random_body(digits: str) -> bytes:
    rng = np.random.default_rng(3)
    values = rng.normal(scale=10.0 ** rng.integers(-8, 9, size=(4000, 20)), size=(4000, 20))
    return "\n".join(",".join(format(v, digits) for v in row) for row in values).encode()


@pytest.mark.parametrize("digits", [".17g", ".9g", ".6e", "f"])
def test_values_round_exactly_as_numpy(digits: str) -> None:
    body = random_body(digits)
    assert len(body) >= ARROW_MIN_BYTES
    assert parse_large(body) is not None
    np.testing.assert_array_equal(decode(body), by_numpy(body))


@pytest.mark.parametrize(
    "body",
    [
        big(b"1.5,,3,nan,-inf"),  # empty field, NaN and inf parse as numpy parses them
        big(b"1,2,3", b"\r\n"),  # CRLF
        b"\xef\xbb\xbf" + big(b" 1 ,\t2,3e-2 "),  # BOM, spaces around numbers
        b"\n\n" + big(b"1,2,3").replace(b"1,2,3\n1,2", b"1,2,3\n\n1,2", 3),  # blank lines
        big(b"4,5,"),  # a trailing empty field
    ],
    ids=["missing", "crlf", "bom-spaces", "blank-lines", "trailing-empty"],
)
def test_text_forms_match_numpy(body: bytes) -> None:
    assert parse_large(body) is not None
    np.testing.assert_array_equal(decode(body), by_numpy(body.removeprefix(b"\xef\xbb\xbf")))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (big(b"1,2,3") + b"1,x,3\n", "row {n}, column 2: could not convert 'x'"),
        (big(b"1,2,3") + b"1,2\n", "row {n} has 2 columns but row 1 has 3"),
        (big(b"1,2,3") + b'1,"2",3\n', "row {n}, column 2"),
        (big(b"1,2,3") + b"1,2,3\r4,5,6\n", "row {n} has 5 columns"),  # a lone CR: no line end
    ],
    ids=["bad-cell", "ragged", "quoted", "lone-cr"],
)
def test_errors_are_the_numpy_paths(body: bytes, message: str) -> None:
    assert parse_large(body) is None
    line = body.count(b"\n")
    with pytest.raises(DecodeError, match=message.format(n=line)):
        decode(body)


def test_a_line_of_spaces_is_skipped_as_numpy_skips_it() -> None:
    body = big(b"1,2,3") + b"   \n7,8,9\n"
    assert parse_large(body) is None  # Arrow would call it a one-column row
    rows = decode(body)
    np.testing.assert_array_equal(rows[-1], [7, 8, 9])
    assert rows.shape == (body.count(b"1,2,3") + 1, 3)


def test_infinity_is_located_by_line() -> None:
    body = b"\n" + big(b"1,2,3") + b"1,2,1e39\n"
    batch = CODEC.decode(body, MediaType(CSV))
    assert np.isinf(np.asarray(batch.features)[-1, 2])
    last_line = body.count(b"\n")
    assert batch.locate(batch.n_rows - 1, 2) == f"row {last_line}, column 3"


def test_infinity_is_located_by_line_after_a_byte_order_mark() -> None:
    body = b"\xef\xbb\xbf\n" + big(b"1,2,3") + b"\n1,-1e39,3\n"  # a mark on a blank line
    batch = CODEC.decode(body, MediaType(CSV))
    last_line = body.count(b"\n")
    assert batch.locate(batch.n_rows - 1, 1) == f"row {last_line}, column 2"


def test_a_big_body_of_blank_lines_is_empty() -> None:
    body = b"\n\r\n" * ARROW_MIN_BYTES
    assert parse_large(body) is None
    with pytest.raises(DecodeError, match="text/csv: the body is empty"):
        decode(body)


def test_a_big_body_that_is_not_utf8_is_refused_as_text() -> None:
    body = big(b"1,2,3") + b"1,\xff,3\n"
    with pytest.raises(DecodeError, match="text/csv: the body is not valid UTF-8"):
        decode(body)
