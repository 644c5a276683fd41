"""The byte-level scan of a text/libsvm body (``codecs.libsvm``): token bounds, lines, colons
and which tokens are pairs, labels or ``qid:``, all as numpy arrays over the body's bytes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from smserve.errors import DecodeError, excerpt

IntArray = npt.NDArray[np.intp]

SPACE, COLON = 32, 58


def token_bounds(data: npt.NDArray[np.uint8]) -> tuple[IntArray, IntArray]:
    """Start and end offsets of the runs of non-space bytes."""
    spaces = np.ones(data.size + 2, dtype=bool)
    np.less_equal(data, SPACE, out=spaces[1:-1])
    edges = np.flatnonzero(spaces[1:] != spaces[:-1])  # alternately a start and an end
    return edges[0::2], edges[1::2]


def line_of(starts: IntArray, newlines: IntArray) -> IntArray:
    """The 0-based line of each token: how many newlines come before its start."""
    first_after = np.searchsorted(starts, newlines)  # the token each newline precedes
    lines: IntArray = np.cumsum(np.bincount(first_after, minlength=starts.size + 1))[:-1]
    return lines


def first_colons(
    data: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray
) -> tuple[IntArray, IntArray]:
    """Each token's first colon offset and its colon count, capped at 2."""
    at = np.append(np.flatnonzero(data == COLON), [data.size, data.size])  # sentinels
    first = np.searchsorted(at, starts)
    n_colons = (at[first] < ends).astype(np.intp) + (at[first + 1] < ends)
    return at[first], n_colons


def classify(
    body: bytes,
    data: npt.NDArray[np.uint8],
    starts: IntArray,
    ends: IntArray,
    lines: IntArray,
    colons: IntArray,
    n_colons: IntArray,
) -> tuple[IntArray, IntArray]:
    """Token numbers of the index:value pairs and of the labels; raises DecodeError on the
    first bad token."""
    first_in_line = np.ones(starts.size, dtype=bool)
    first_in_line[1:] = lines[1:] != lines[:-1]
    qid = (n_colons == 1) & (colons - starts == 3)
    qid[qid] = is_qid(data, starts[qid])
    pair = (n_colons == 1) & ~qid
    problems = [
        ((n_colons == 0) & ~first_in_line, "only the first token of a line may lack ':'"),
        (n_colons > 1, "expected one ':' between index and value"),
        (pair & (colons == starts), "the index before ':' is missing"),
        (pair & (colons == ends - 1), "the value after ':' is missing"),
    ]
    bad = [(int(np.argmax(mask)), text) for mask, text in problems if mask.any()]
    if bad:
        number, problem = min(bad)
        token = body[starts[number] : ends[number]].decode("utf-8", "replace")
        raise DecodeError(f"text/libsvm: line {lines[number] + 1}: {excerpt(token)!r}: {problem}")
    return np.flatnonzero(pair), np.flatnonzero((n_colons == 0) & first_in_line)


def is_qid(data: npt.NDArray[np.uint8], starts: IntArray) -> npt.NDArray[np.bool_]:
    """Whether the tokens at ``starts`` (which have a colon at offset 3) begin ``qid:``."""
    q, i, d = (data[starts + offset] for offset in range(3))
    return (q == ord("q")) & (i == ord("i")) & (d == ord("d"))  # type: ignore[no-any-return]


def offsets(starts: IntArray, ends: IntArray) -> IntArray:
    """Every offset in the ranges ``[starts[i], ends[i])``, concatenated."""
    lengths = ends - starts
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    offsets: IntArray = np.arange(int(lengths.sum())) + shift
    return offsets
