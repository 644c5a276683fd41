"""What the text codecs share: strict UTF-8 decoding, numpy's number parser and orjson's
number writer.

Every text decoder parses numbers with ``np.loadtxt``'s C parser, so ``1e5``, ``.5``, ``nan``
and ``inf`` mean the same in every format; every text encoder formats numbers with one orjson
call per output. This module does not know any one format.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from smserve.budget import RequestBudget
from smserve.errors import DecodeError

# What parsing text into numbers costs (measured by bench/inprocess/decode_memory.py): the text as a
# str and the parser's copy of it (four bytes a character), per body byte; and per value,
# numpy's reader's bookkeeping (most in one wide row: about 45 bytes a field), the value as
# parsed (float64) and as kept (float32).
TEXT_BYTES_PER_BYTE = 8
VALUE_BYTES = 48


def decode_utf8(body: bytes, media_type: str) -> str:
    """``body`` as text; a leading byte-order mark is dropped. Raises DecodeError."""
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"{media_type}: the body is not valid UTF-8 (byte {exc.start}: {exc.reason}); "
            "send UTF-8 text"
        ) from None


def check_text_budget(body: bytes, budget: RequestBudget, media_type: str) -> None:
    """Charge parsing ``body``'s comma- or newline-separated numbers to ``budget``."""
    budget.check_pieces(body, TEXT_BYTES_PER_BYTE, VALUE_BYTES, b",\n", media_type)


def load_numbers(text: str, delimiter: str | None, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """``np.loadtxt`` with no comment or quote handling, always 2-D; raises ValueError.

    ``text`` must hold at least one non-blank line (loadtxt warns on empty input).
    """
    with np.errstate(over="ignore"):  # out-of-range numbers become inf, as float() would
        return np.loadtxt(
            io.StringIO(text), delimiter=delimiter, dtype=dtype, comments=None, ndmin=2
        )


def parses(fields: Sequence[str], delimiter: str) -> bool:
    """True when ``fields`` joined by ``delimiter`` parse as exactly one number each."""
    text = delimiter.join(fields)
    if not text.strip():
        return False
    try:
        values = load_numbers(text, delimiter, np.float64)
    except ValueError:
        return False
    return values.size == len(fields)


def first_unparsable(fields: Sequence[str], delimiter: str) -> int | None:
    """The index of the first field that is not a number, or None when all are.

    Bisects with the parser the fast path used, so the answer agrees with it; the cost is
    about two parses of ``fields``. Fields must not contain ``delimiter``.
    """
    lo, hi = 0, len(fields)
    if hi == 0 or parses(fields, delimiter):
        return None
    while hi - lo > 1:  # invariant: fields[lo:hi] holds the first bad field
        mid = (lo + hi) // 2
        if parses(fields[lo:mid], delimiter):
            lo = mid
        else:
            hi = mid
    return lo


def number_tokens(array: np.ndarray) -> list[bytes]:
    """Every value of ``array`` in C order as JSON number text, from one orjson call.

    Floats are promoted to float64 first (so float32 ``0.73385209`` is written
    ``0.7338520884513855`` and ``1.0`` keeps its ``.0``), NaN and infinities are ``null``,
    integers stay integers and booleans become 0 and 1. Raises TypeError for other dtypes.
    """
    kind = array.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"cannot write {array.dtype} outputs as numbers")
    dtype = np.float64 if kind == "f" else np.int64 if kind == "b" else array.dtype
    flat = np.ascontiguousarray(array, dtype=dtype).reshape(-1)
    if flat.size == 0:
        return []
    return orjson.dumps(flat, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")


def row_cells(
    array: np.ndarray, tokens: list[bytes], separator: bytes, template: bytes = b"%b"
) -> list[bytes]:
    """One cell per row of ``array``: its token, or its tokens joined by ``separator`` and
    put into ``template`` (a bytes %-template such as ``b"[%b]"``) when it is a vector."""
    if array.ndim == 1:
        return tokens
    width = int(np.prod(array.shape[1:]))
    groups = zip(*[iter(tokens)] * width, strict=True) if width else [()] * array.shape[0]
    joined = map(separator.join, groups)
    return list(joined) if template == b"%b" else list(map(template.__mod__, joined))


def first_interior_blank_line(nonblank: npt.NDArray[np.bool_]) -> int | None:
    """The 1-based number of the first blank line before the last non-blank one, if any.

    Batch Transform (``SplitType=Line``) needs one output line per input line, so there a
    blank line inside a body is an error rather than something to skip; trailing ones are fine.
    """
    filled = np.flatnonzero(nonblank)
    if filled.size == 0:
        return None
    blanks = np.flatnonzero(~nonblank[: filled[-1]])
    return int(blanks[0]) + 1 if blanks.size else None


def blank_line_error(media_type: str, line: int) -> DecodeError:
    return DecodeError(
        f"{media_type}: line {line} is empty; in batch mode every line is a record and gets "
        "one output line, so remove blank lines (or send each record on its own line)"
    )
