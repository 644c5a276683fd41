"""JSON instances (already parsed) into a Batch: the instance forms application/json and
application/jsonlines share. It does not parse JSON text or know where instances came from;
callers pass a function that names an instance's location for error messages.

Instance forms (any mix in one batch):

* a bare row ``[1.5, 16.0, null]`` (null is a missing value, NaN);
* ``{"features": [...]}``, ``{"data": {"features": [...]}}`` or
  ``{"data": {"features": {"values": [...]}}}``; an optional ``"shape": [D]`` must equal the
  number of values;
* sparse ``{"data": {"features": {"keys": [...], "shape": [D], "values": [...]}}}``: keys are
  0-based, strictly increasing, in ``[0, D)``;
* an object of feature names ``{"age": 31, "income": 5.2e4}`` (neither ``"features"`` nor
  ``"data"``), given the model's feature names (``f0``.. for a model without names): values
  are put in the model's order, a missing name or a name the model lacks is a 400.

Other members (``"configuration"``, ``"label"``, ...) are ignored. When any instance is sparse
the batch is a CSR matrix of width D (every sparse D must agree, dense rows must have D values
and are stored whole); otherwise it is a dense float32 array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from smserve.budget import UNLIMITED, RequestBudget
from smserve.codecs.base import DecodeContext
from smserve.errors import DecodeError, excerpt
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, FloatArray

Locate = Callable[[int], str]  # instance position -> "instances[3]" or "line 4"

_NUMBER_TYPES = frozenset({int, float, type(None)})
_MAX_WIDTH = 2**31 - 1  # CSR column indices are int32


class _Malformed(Exception):
    """One instance is malformed; the caller adds its location."""


@dataclass(frozen=True, slots=True)
class _Sparse:
    keys: list[Any]
    values: list[Any]
    width: int


Row = list[Any] | _Sparse


def batch_from_instances(
    instances: Sequence[object],
    media_type: str,
    locate: Locate,
    context: DecodeContext,
    budget: RequestBudget = UNLIMITED,
) -> Batch:
    """The Batch for ``instances`` (non-empty); raises DecodeError naming the instance.
    ``context.key_names`` are the names instances that are objects of names use; a sparse
    batch's width is charged to ``budget`` (the parsed values were, with the JSON)."""
    rows = _rows(instances, media_type, locate, _Named(context.key_names))
    sparse_at = [i for i, row in enumerate(rows) if type(row) is _Sparse]
    columns = _Columns(rows, media_type, locate)
    if sparse_at:
        width = rows[sparse_at[0]].width  # type: ignore[union-attr]
        context.check_sparse_width(width, budget, media_type)
    features = columns.sparse(sparse_at[0]) if sparse_at else columns.dense()
    return Batch(features, lambda row, column: f"{locate(row)}, column {column + 1}")


def _rows(instances: Sequence[object], media_type: str, locate: Locate, named: _Named) -> list[Row]:
    if set(map(type, instances)) == {list}:  # bare rows: nothing to unwrap
        return list(instances)  # type: ignore[arg-type]
    rows: list[Row] = []
    for index, instance in enumerate(instances):
        try:
            rows.append(_row(instance, named))
        except _Malformed as exc:
            raise DecodeError(f"{media_type}: {locate(index)}: {exc}") from None
    return rows


def _row(instance: object, named: _Named) -> Row:
    if type(instance) is list:
        return instance
    if type(instance) is not dict:
        raise _Malformed(
            f'expected a list of numbers or an object with "features", got {_kind(instance)}'
        )
    if named.names and "features" not in instance and "data" not in instance:
        return named.row(instance)
    if "features" in instance:
        if "data" in instance:
            raise _Malformed('has both "features" and "data"; send one of them')
        return _features(instance["features"])
    data = instance.get("data")
    if type(data) is not dict or "features" not in data:
        raise _Malformed('expected "features": [...] or "data": {"features": ...}')
    return _features(data["features"])


class _Named:
    """Reads objects of feature names into rows in the model's order (one C-level lookup)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names, self.known = tuple(names), frozenset(names)
        self.get = itemgetter(*self.names) if self.names else None

    def row(self, instance: dict[str, Any]) -> list[Any]:
        assert self.get is not None
        try:
            values = self.get(instance)
        except KeyError as exc:
            raise _Malformed(
                f"feature {exc.args[0]!r} is missing; an object of feature names needs every "
                f"model feature: {', '.join(map(repr, self.names[:5]))}"
                f"{' ...' if len(self.names) > 5 else ''}"
            ) from None
        if len(instance) != len(self.names):
            extra = [key for key in instance if key not in self.known][:5]
            raise _Malformed(
                f"{', '.join(repr(excerpt(key)) for key in extra)}: not model features; send "
                "only feature names"
            )
        return list(values) if len(self.names) > 1 else [values]


def _features(value: object) -> Row:
    if type(value) is list:
        return value
    if type(value) is not dict:
        raise _Malformed(f'"features" must be a list or an object, got {_kind(value)}')
    if "keys" in value:
        return _sparse(value)
    values = value.get("values")
    if type(values) is not list:
        raise _Malformed('"features" needs "values": [...] ("keys" and "shape" too if sparse)')
    if "shape" in value and _width(value["shape"]) != len(values):
        raise _Malformed(f'"shape" is {value["shape"]} but there are {len(values)} values')
    return values


def _sparse(value: dict[str, Any]) -> _Sparse:
    keys, values = value["keys"], value.get("values")
    if type(keys) is not list or type(values) is not list:
        raise _Malformed('sparse "features" need "keys" and "values" lists')
    if len(keys) != len(values):
        raise _Malformed(f"sparse features have {len(keys)} keys but {len(values)} values")
    if "shape" not in value:
        raise _Malformed('sparse "features" need "shape": [number of features]')
    return _Sparse(keys, values, _width(value["shape"]))


def _width(shape: object) -> int:
    if (
        type(shape) is not list
        or len(shape) != 1
        or type(shape[0]) is not int
        or not 0 < shape[0] <= _MAX_WIDTH
    ):
        raise _Malformed(
            '"shape" must be a list of one positive integer like [2000], not '
            f"{excerpt(repr(shape))}"
        )
    return shape[0]


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list (nested too deep: an instance is one flat row of numbers)"
    return "an object" if isinstance(value, dict) else "a string"


class _Columns:
    """Flattens validated rows into one numpy array per column of the result."""

    def __init__(self, rows: list[Row], media_type: str, locate: Locate) -> None:
        self.rows, self.media_type, self.locate = rows, media_type, locate

    def fail(self, index: int, message: str) -> DecodeError:
        return DecodeError(f"{self.media_type}: {self.locate(index)}: {message}")

    def dense(self) -> FloatArray:
        rows: list[list[Any]] = self.rows  # type: ignore[assignment]
        lengths = np.fromiter(map(len, rows), dtype=np.intp, count=len(rows))
        ragged = np.flatnonzero(lengths != lengths[0])
        if ragged.size:
            index = int(ragged[0])
            raise self.fail(
                index,
                f"has {lengths[index]} features but {self.locate(0)} has {lengths[0]}; "
                "every instance needs the same number",
            )
        if lengths[0] == 0:
            raise self.fail(0, "has no features")
        values = self.numbers(list(chain.from_iterable(rows)), lengths, "features")
        return values.reshape(len(rows), int(lengths[0]))

    def sparse(self, first_sparse: int) -> sp.csr_matrix:
        width = self.rows[first_sparse].width  # type: ignore[union-attr]
        keys, values = self.sparse_lists(width, first_sparse)
        lengths = np.fromiter(map(len, keys), dtype=np.intp, count=len(keys))
        indices = self.keys(list(chain.from_iterable(keys)), lengths, width)
        data = self.numbers(list(chain.from_iterable(values)), lengths, "values")
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        return sp.csr_matrix((data, indices, indptr), shape=(len(self.rows), width))

    def sparse_lists(self, width: int, first_sparse: int) -> tuple[list[Any], list[Any]]:
        keys: list[Any] = []
        values: list[Any] = []
        for index, row in enumerate(self.rows):
            if isinstance(row, _Sparse):
                if row.width != width:
                    raise self.fail(
                        index,
                        f'has "shape" [{row.width}] but {self.locate(first_sparse)} '
                        f"has [{width}]; every instance needs the same number of features",
                    )
                keys.append(row.keys)
                values.append(row.values)
            elif len(row) != width:
                raise self.fail(index, f"has {len(row)} values but sparse instances have {width}")
            else:
                keys.append(range(width))
                values.append(row)
        return keys, values

    def numbers(self, flat: list[Any], lengths: npt.NDArray[np.intp], what: str) -> FloatArray:
        if not set(map(type, flat)) <= _NUMBER_TYPES:
            at = next(i for i, value in enumerate(flat) if type(value) not in _NUMBER_TYPES)
            index, position = _owner(at, lengths)
            raise self.fail(
                index,
                f"{what}[{position}] is {_kind(flat[at])}; features must be numbers or null",
            )
        with np.errstate(over="ignore"):  # beyond float32's range is inf, as in the CSV codec
            return np.array(flat, dtype=np.float32)

    def keys(self, flat: list[Any], lengths: npt.NDArray[np.intp], width: int) -> np.ndarray:
        if not set(map(type, flat)) <= {int}:
            at = next(i for i, key in enumerate(flat) if type(key) is not int)
            raise self.key_error(flat, at, lengths, f"is {_kind(flat[at])}; keys must be integers")
        keys = np.array(flat, dtype=np.float64)  # float64: any JSON integer compares safely
        increasing = np.ones(len(flat), dtype=bool)
        increasing[1:] = keys[1:] > keys[:-1]
        increasing[(np.cumsum(lengths) - lengths)[lengths > 0]] = True  # first key of a row
        bad = np.flatnonzero((keys < 0) | (keys >= width) | ~increasing)
        if bad.size:
            at = int(bad[0])
            problem = (
                f'is outside [0, {width}) given by "shape"'
                if not 0 <= flat[at] < width
                else f"follows {flat[at - 1]}; keys must be increasing and unique"
            )
            raise self.key_error(flat, at, lengths, problem)
        return keys.astype(np.int32)

    def key_error(
        self, flat: list[Any], at: int, lengths: npt.NDArray[np.intp], problem: str
    ) -> DecodeError:
        index, position = _owner(at, lengths)
        return self.fail(index, f"keys[{position}] = {excerpt(repr(flat[at]))} {problem}")


def _owner(at: int, lengths: npt.NDArray[np.intp]) -> tuple[int, int]:
    """(instance, position within it) of flat element ``at``."""
    ends = np.cumsum(lengths)
    index = int(np.searchsorted(ends, at, side="right"))
    return index, at - int(ends[index] - lengths[index])
