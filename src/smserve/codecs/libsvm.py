"""text/libsvm: ``[label] [qid:N] index:value ...`` lines into a float32 CSR matrix.

Input only (there is no libsvm response format). It owns tokenising, validation and the
index base; values are parsed by the shared parser in ``codecs/text.py``. The body is
scanned as bytes with numpy: no per-line or per-token Python unless the body is malformed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from smserve.codecs.base import TEXT_PARAMETERS, UNNAMED, DecodeContext
from smserve.codecs.libsvm_scan import (
    SPACE,
    classify,
    first_colons,
    line_of,
    offsets,
    token_bounds,
)
from smserve.codecs.text import decode_utf8, first_unparsable, load_numbers
from smserve.config import LIBSVM_INDEX_BASES
from smserve.errors import DecodeError, excerpt
from smserve.media import LIBSVM, MediaType
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, Locate

IntArray = npt.NDArray[np.intp]

_NEWLINE, _ZERO = 10, 48
# Every ASCII control character separates tokens, like a space: a single compare finds them.
_TO_SPACES = bytes.maketrans(bytes(range(33)) + b":", b" " * 34)
_MAX_INDEX = 2**31 - 2  # the width must fit CSR's int32 column indices
_MAX_INDEX_DIGITS = len(str(_MAX_INDEX))
# The scan's arrays: a few bytes per body byte, and a dozen 8-byte offsets, masks and numbers
# per token (a token takes at least two bytes with its separator): at most 30 bytes per body
# byte measured (bench/inprocess/decode_memory.py).
SCAN_BYTES_PER_BYTE = 40


class LibsvmCodec:
    """Decodes ``text/libsvm`` (also sent as ``text/x-libsvm`` or ``libsvm``).

    Each non-blank line is a row: an optional label (a first token without ``:``, ignored),
    ``qid:N`` tokens (ignored) and ``index:value`` pairs, separated by spaces or tabs (any
    ASCII control character counts as a space). Indices are digits only; they may come in any
    order but not twice in a row. Absent indices are missing values. The width is the largest
    index (after the shift) plus one.

    ``index_base`` says how indices map to columns:

    * ``"0"``: as they are (the built-in XGBoost container before 2026);
    * ``"1"``: minus one, so index 0 is an error;
    * ``"auto"``: minus one when the smallest index in the whole body is 1 or more (the
      built-in's 2026 heuristic). Pitfall: a 0-based body whose rows never use feature 0 is
      shifted too, silently moving every feature one column left.

    Errors name the 1-based line and the offending token.
    """

    media_type = LIBSVM
    parameters = TEXT_PARAMETERS

    def __init__(self, index_base: str = "0") -> None:
        if index_base not in LIBSVM_INDEX_BASES:
            raise ValueError(f"index_base must be one of {LIBSVM_INDEX_BASES}, not {index_base!r}")
        self.index_base = index_base

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        budget = context.budget.for_body(len(body))
        budget.check(SCAN_BYTES_PER_BYTE * len(body), f"{LIBSVM}: a {len(body)}-byte body")
        tokens = _scan(body)
        indices, values = tokens.pairs()
        shift = self._shift(tokens, indices)
        context.check_sparse_width(int(indices.max()) - shift + 1, budget, LIBSVM)
        return Batch(tokens.csr(indices - shift, values), _locator(tokens, shift))

    def decode_labeled(self, body: bytes) -> tuple[sp.csr_matrix, npt.NDArray[np.float32]]:
        """Training data: the features as :meth:`decode` reads them, and each row's label,
        its first token, which must be there. Raises DecodeError naming the line."""
        tokens = _scan(body)
        return self._features(tokens)[0], _labels(tokens)

    def _features(self, tokens: _Tokens) -> tuple[sp.csr_matrix, int]:
        """The CSR matrix and the shift (0 or 1) taken off every index."""
        indices, values = tokens.pairs()
        shift = self._shift(tokens, indices)
        return tokens.csr(indices - shift, values), shift

    def _shift(self, tokens: _Tokens, indices: IntArray) -> int:
        if self.index_base == "1":
            zero = np.flatnonzero(indices == 0)
            if zero.size:
                raise tokens.fail(int(zero[0]), "index 0 is not allowed: indices start at 1")
            return 1
        return int(self.index_base == "auto" and indices.min() >= 1)


@dataclass(frozen=True, slots=True)
class _Tokens:
    """The whitespace-separated tokens of a body, as byte offsets, and the pairs among them."""

    body: bytes
    data: npt.NDArray[np.uint8]
    starts: IntArray  # token start offsets
    ends: IntArray  # token end offsets (exclusive)
    lines: IntArray  # 0-based line of each token
    colons: IntArray  # offset of each token's first colon (meaningless when it has none)
    pairs_at: IntArray  # token numbers of the index:value tokens, in body order
    labels_at: IntArray  # token numbers of the labels (first tokens without a colon)
    n_lines: int

    @classmethod
    def scan(cls, body: bytes) -> _Tokens:
        data = np.frombuffer(body, dtype=np.uint8)
        starts, ends = token_bounds(data)
        if starts.size == 0:
            raise DecodeError("text/libsvm: the body is empty; send index:value pairs per line")
        newlines = np.flatnonzero(data == _NEWLINE)
        lines = line_of(starts, newlines)
        colons, n_colons = first_colons(data, starts, ends)
        pairs_at, labels_at = classify(body, data, starts, ends, lines, colons, n_colons)
        n_lines = int(newlines.size) + 1
        return cls(body, data, starts, ends, lines, colons, pairs_at, labels_at, n_lines)

    def text(self, number: int) -> str:
        return self.body[self.starts[number] : self.ends[number]].decode("utf-8", "replace")

    def fail(self, pair: int, problem: str) -> DecodeError:
        """A DecodeError about the ``pair``-th index:value token."""
        number = int(self.pairs_at[pair])
        return DecodeError(
            f"text/libsvm: line {self.lines[number] + 1}: {excerpt(self.text(number))!r}: {problem}"
        )

    def pairs(self) -> tuple[IntArray, npt.NDArray[np.float32]]:
        """(index, value) of every pair; raises DecodeError on a bad index or value."""
        if self.pairs_at.size == 0:
            raise DecodeError("text/libsvm: there are no index:value pairs in the body")
        # The values are parsed from a copy of the body where everything else is blanked:
        # separators and colons by translate, labels and qids here, index digits as read.
        values_only = np.frombuffer(bytearray(self.body.translate(_TO_SPACES)), dtype=np.uint8)
        others = np.ones(self.starts.size, dtype=bool)
        others[self.pairs_at] = False
        values_only[offsets(self.starts[others], self.ends[others])] = SPACE
        indices = self._take_indices(values_only)
        return indices, self._values(values_only.tobytes().decode("utf-8"))

    def _take_indices(self, values_only: npt.NDArray[np.uint8]) -> IntArray:
        """Indices from their digits, exactly, one vector step per digit position; each digit
        read is blanked in ``values_only``."""
        starts = self.starts[self.pairs_at]
        lengths = self.colons[self.pairs_at] - starts
        indices = np.zeros(starts.size, dtype=np.intp)
        bad = lengths > _MAX_INDEX_DIGITS
        for position in range(min(int(lengths.max()), _MAX_INDEX_DIGITS)):
            active = lengths > position
            at = starts + np.minimum(position, lengths - 1)  # a short index rereads its last
            digits = self.data[at] - np.uint8(_ZERO)  # wraps: non-digits become > 9
            values_only[at] = SPACE
            bad |= active & (digits > 9)
            indices = np.where(active, indices * 10 + digits, indices)
        bad |= indices > _MAX_INDEX
        if bad.any():
            problem = f"the index must be a whole number from 0 to {_MAX_INDEX}, digits only"
            raise self.fail(int(np.argmax(bad)), problem)
        return indices

    def _values(self, values_only: str) -> npt.NDArray[np.float32]:
        try:
            values = load_numbers(values_only, None, np.float32).reshape(-1)
        except ValueError:
            values = np.empty(0, dtype=np.float32)
        if values.size != self.pairs_at.size:
            raise self._unparsable()
        return values

    def _unparsable(self) -> DecodeError:
        values = [  # error path only: the body is malformed
            self.body[colon + 1 : end].decode("utf-8", "replace")
            for colon, end in zip(
                self.colons[self.pairs_at].tolist(), self.ends[self.pairs_at].tolist(), strict=True
            )
        ]
        pair = first_unparsable(values, " ")
        if pair is None:
            return DecodeError("text/libsvm: the values could not be parsed as numbers")
        return self.fail(pair, f"the value {excerpt(values[pair])!r} is not a number")

    def csr(self, indices: IntArray, values: npt.NDArray[np.float32]) -> sp.csr_matrix:
        """The CSR matrix: one row per non-blank line, columns sorted, duplicates rejected."""
        has_tokens = np.zeros(self.n_lines, dtype=bool)
        has_tokens[self.lines] = True
        rows = (np.cumsum(has_tokens) - 1)[self.lines[self.pairs_at]]
        n_rows, width = int(has_tokens.sum()), int(indices.max()) + 1
        keys = rows.astype(np.int64) * width + indices
        if np.any(keys[1:] <= keys[:-1]):  # not sorted within rows, or a repeat
            order = np.argsort(keys, kind="stable")
            repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
            if repeated.size:
                raise self.fail(int(order[repeated + 1].min()), "the index repeats in this row")
            rows, indices, values = rows[order], indices[order], values[order]
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
        return sp.csr_matrix(
            (values, indices.astype(np.int32), indptr), shape=(n_rows, width), dtype=np.float32
        )


def _locator(tokens: _Tokens, shift: int) -> Locate:
    """Names a value by its line and its index as written, computed only when asked."""

    def locate(row: int, column: int) -> str:
        line = int(np.unique(tokens.lines)[row]) + 1
        return f"line {line}, index {column + shift}"

    return locate


def _scan(body: bytes) -> _Tokens:
    decode_utf8(body, LIBSVM)  # only to reject invalid UTF-8; the scan works on bytes
    return _Tokens.scan(body.removeprefix(b"\xef\xbb\xbf"))


def _labels(tokens: _Tokens) -> npt.NDArray[np.float32]:
    """Each row's label (its first token); raises DecodeError naming a line without one."""
    row_lines = np.unique(tokens.lines)
    label_lines = tokens.lines[tokens.labels_at]
    if label_lines.size != row_lines.size:
        missing = row_lines[~np.isin(row_lines, label_lines)][0]
        raise DecodeError(
            f"text/libsvm: line {missing + 1}: the row has no label; training rows start with one"
        )
    texts = [tokens.text(number) for number in tokens.labels_at.tolist()]  # one per row
    bad = first_unparsable(texts, " ")
    if bad is not None:
        line = label_lines[bad] + 1
        raise DecodeError(
            f"text/libsvm: line {line}: the label {excerpt(texts[bad])!r} is not a number"
        )
    return load_numbers(" ".join(texts), " ", np.float32).reshape(-1)
