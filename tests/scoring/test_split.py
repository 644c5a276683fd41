"""Records and mini-batches: whole records only, under the limit, numbered as in the file."""

from __future__ import annotations

import io

import pytest

from smserve.codecs.recordio.framing import HEADER, LENGTH_BITS, MAGIC, read_payloads
from smserve.errors import DecodeError
from smserve.scoring.split import RecordTooLarge, chunks, records_of
from tests.unit.codecs.recordio_bodies import body_of, frame_bytes, record


def _lines(n: int) -> bytes:
    return b"".join(b"%d,%d\n" % (i, i * 10) for i in range(1, n + 1))


def test_line_batches_hold_whole_lines_under_the_limit_in_order() -> None:
    body = _lines(200)
    found = list(chunks(io.BytesIO(body), "Line", 64))
    assert b"".join(c.body for c in found) == body
    assert all(len(c.body) <= 64 and c.body.endswith(b"\n") for c in found)
    assert [c.first_record for c in found[:3]] == [
        1,
        1 + found[0].n_records,
        1 + found[0].n_records + found[1].n_records,
    ]
    assert sum(c.n_records for c in found) == 200
    assert all(body[c.offset : c.offset + len(c.body)] == c.body for c in found)


def test_a_last_line_without_a_newline_gets_one() -> None:
    assert [c.body for c in chunks(io.BytesIO(b"1,2\n3,4"), "Line", 100)] == [b"1,2\n3,4\n"]


def test_single_record_sends_one_line_per_batch() -> None:
    found = list(chunks(io.BytesIO(b"1\n\n3"), "Line", 100, single_record=True))
    assert [(c.body, c.first_record) for c in found] == [(b"1\n", 1), (b"\n", 2), (b"3\n", 3)]


def test_a_line_over_the_limit_is_named() -> None:
    with pytest.raises(RecordTooLarge, match=r"record 3 \(byte 8\)"):
        list(chunks(io.BytesIO(b"1,2\n3,4\n" + b"9" * 50 + b"\n"), "Line", 20))


def test_split_none_is_one_record_and_keeps_its_limit() -> None:
    assert [c.n_records for c in chunks(io.BytesIO(b'{"a": 1}'), "None", 100)] == [1]
    with pytest.raises(RecordTooLarge):
        list(chunks(io.BytesIO(b"x" * 101), "None", 100))


def test_recordio_batches_keep_records_and_multi_part_records_whole() -> None:
    parts = frame_bytes(b"ab", flag=1) + frame_bytes(b"cd", flag=2) + frame_bytes(b"ef", flag=3)
    singles = [record([float(i)]) for i in range(5)]
    body = body_of(singles[:2]) + parts + body_of(singles[2:])
    found = list(chunks(io.BytesIO(body), "RecordIO", 80))
    assert b"".join(c.body for c in found) == body
    assert sum(c.n_records for c in found) == 6
    assert any(parts in c.body for c in found)
    assert [len(records_of(c.body, "RecordIO")) for c in found] == [c.n_records for c in found]


def test_broken_recordio_framing_names_the_byte() -> None:
    body = body_of([record([1.0])])
    with pytest.raises(DecodeError, match=f"byte {len(body)}"):
        list(chunks(io.BytesIO(body + b"\x00" * 8), "RecordIO", 1000))
    with pytest.raises(DecodeError, match="cut short"):
        list(chunks(io.BytesIO(body[:-3]), "RecordIO", 1000))


def test_records_of_a_line_batch_are_its_lines() -> None:
    assert records_of(b"1\n\n3\n", "Line") == [b"1\n", b"\n", b"3\n"]


def _frame(flag: int, payload: bytes) -> bytes:
    return (
        HEADER.pack(MAGIC, flag << LENGTH_BITS | len(payload)) + payload + bytes(-len(payload) % 4)
    )


@pytest.mark.parametrize(
    "body",
    [
        _frame(0, b"ab") + _frame(2, b"cd"),  # a middle part with no first
        _frame(1, b"ab") + _frame(0, b"cd"),  # a complete frame inside a multi-part record
        _frame(1, b"ab") + _frame(2, b"cd"),  # the input ends inside a multi-part record
        _frame(5, b"ab"),  # a flag over 3
        _frame(0, b"ab") + b"\x0a\x23",  # stray bytes
        _frame(0, b"abcd")[:-2],  # a cut payload
    ],
    ids=["no-first", "complete-inside", "no-last", "flag", "stray", "cut"],
)
def test_the_split_and_the_codec_refuse_recordio_framing_alike(body: bytes) -> None:
    with pytest.raises(DecodeError) as by_codec:
        read_payloads(body)
    with pytest.raises(DecodeError) as by_split:
        list(chunks(io.BytesIO(body), "RecordIO", 1000))
    assert str(by_split.value) == str(by_codec.value)
