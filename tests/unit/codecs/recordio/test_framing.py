"""RecordIO framing: frame walk, byte-offset errors, multi-part reassembly (dmlc and ml-io)."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from smserve.codecs.recordio.codec import read_records
from smserve.codecs.recordio.framing import read_payloads
from smserve.errors import DecodeError
from tests.unit.codecs.recordio_bodies import MAGIC, body_of, dense_body, frame_bytes, record

ROW = record([1.5, 16.0, 14.0, 23.0])  # a 32-byte payload
ROWS = dense_body([[1.0, 2.0], [3.0, 4.0]])  # two 32-byte frames (24-byte payloads)
END = len(ROWS)


def _offset(error: pytest.ExceptionInfo[DecodeError]) -> int:
    match = re.search(r"byte offset (\d+)", str(error.value))
    assert match, str(error.value)
    return int(match.group(1))


@pytest.mark.parametrize(
    ("body", "offset"),
    [
        pytest.param(ROWS + b"\x00", END, id="1 trailing byte"),
        pytest.param(ROWS + b"\x0a\x23\xd7", END, id="3 trailing bytes"),
        pytest.param(ROWS + struct.pack("<I", MAGIC), END, id="header without length"),
        pytest.param(b"\x00" * 8 + ROWS, 0, id="bad magic"),
        pytest.param(ROWS[:32] + frame_bytes(ROW, magic=0x3ED7230A), 32, id="old dmlc magic"),
        pytest.param(ROWS[:-4], 32 + 8, id="truncated payload"),
        pytest.param(frame_bytes(ROW[:-1])[:-1], 8, id="truncated padding"),
        pytest.param(ROWS + frame_bytes(ROW, flag=4), END + 4, id="flag 4"),
        pytest.param(ROWS + frame_bytes(ROW, flag=7), END + 4, id="flag 7"),
    ],
)
def test_malformed_framing_names_the_byte_offset(body: bytes, offset: int) -> None:
    with pytest.raises(DecodeError) as error:
        read_records(body)
    assert _offset(error) == offset


def test_padding_is_skipped_and_not_part_of_the_payload() -> None:
    payload = record([1, 2, 3], kind="int32_tensor")  # 19 bytes + 1 pad byte
    body = frame_bytes(payload) * 2
    assert len(body) == 2 * (8 + 20)
    assert [p.parts for p in read_payloads(body)] == [(payload,), (payload,)]


def _split(payload: bytes, *cuts: int) -> list[bytes]:
    edges = [0, *cuts, len(payload)]
    return [payload[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def _multipart(parts: list[bytes], flags: list[int] | None = None) -> bytes:
    flags = flags or [1] + [2] * (len(parts) - 2) + [3]
    return b"".join(frame_bytes(part, flag) for part, flag in zip(parts, flags, strict=True))


def test_multipart_plain_concatenation_is_reassembled() -> None:
    body = _multipart(_split(ROW, 5, 11, 30)) + frame_bytes(ROW)
    features, _ = read_records(body)
    np.testing.assert_array_equal(features, [[1.5, 16.0, 14.0, 23.0]] * 2)


def test_dmlc_multipart_example_reinserts_the_magic() -> None:
    # reference §3.5 (g): written by mx.recordio.MXRecordIO; the magic sits at payload offset 16
    body = bytes.fromhex(
        "0a23d7ce140000200a1e0a0676616c7565731214121 20a100000c03f".replace(" ", "")
        + "0a23d7ce08000060"
        "000060410000b841"
    )
    assert len(body) == 44
    features, _ = read_records(body)
    x = np.frombuffer(struct.pack("<I", MAGIC), dtype="<f4")[0]
    np.testing.assert_array_equal(features, np.array([[1.5, x, 14.0, 23.0]], dtype=np.float32))


def test_multipart_payload_offset_is_the_first_part() -> None:
    body = frame_bytes(ROW) + _multipart(_split(ROW, 7))
    assert [p.offset for p in read_payloads(body)] == [0, 40]


@pytest.mark.parametrize(
    ("flags", "offset"),
    [
        pytest.param([3], 0, id="last without first"),
        pytest.param([2, 3], 0, id="middle without first"),
        pytest.param([1, 2], 0, id="first without last"),
        pytest.param([1, 0, 3], 12, id="complete inside a sequence"),
        pytest.param([1, 1, 3], 12, id="first inside a sequence"),
    ],
)
def test_invalid_multipart_sequence(flags: list[int], offset: int) -> None:
    parts = [ROW[:4], ROW[4:8], ROW[8:]][: len(flags)]  # frames at offsets 0, 12, 24
    with pytest.raises(DecodeError, match="multi-part") as error:
        read_records(_multipart(parts, flags))
    assert _offset(error) == offset


def test_multipart_that_parses_neither_way_is_rejected() -> None:
    with pytest.raises(DecodeError, match=r"byte offset 0 does not hold an aialgs\.data\.Record"):
        read_records(_multipart([b"\xff\xff", b"\xff\xff"]))


def test_magic_inside_a_complete_frame_is_data() -> None:
    # The SDK never escapes the magic: a frame is read by its length, never by scanning.
    x = np.frombuffer(struct.pack("<I", MAGIC), dtype="<f4")[0]
    body = body_of([record([1.5, float(x), 14.0, 23.0])])
    assert body.count(struct.pack("<I", MAGIC)) == 2
    features, _ = read_records(body)
    assert features[0, 1] == x


def test_empty_body_is_rejected() -> None:
    with pytest.raises(DecodeError, match="no records"):
        read_records(b"")
