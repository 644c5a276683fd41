"""Response bodies laid out as TF Serving's PrettyWriter lays them out (four-space indent).

* predictions (row format): each row on one line; several outputs make one object per row;
* outputs (columnar format): the whole tensor, one element per line (TF writes it so);
* results (classify: ``[[label, score], ...]`` per example; regress: one number each);
* errors: ``{"error": "<message>"}``.

Values are formatted once for the whole array (``floats``), then joined along each axis with
numpy string operations, one column at a time, never one row at a time.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

import numpy as np

from smserve.tfserving.debugjson import quote
from smserve.tfserving.floats import format_floats


def _indent(level: int) -> str:
    return "    " * level


def cell_text(array: np.ndarray, name: str = "") -> np.ndarray:
    """JSON text of each element (floats as TF writes them; ``*_bytes`` strings as b64)."""
    kind = array.dtype.kind
    if kind == "f":
        return format_floats(array if array.dtype.itemsize >= 4 else array.astype(np.float32))
    if kind == "b":
        return np.where(array, "true", "false")
    if kind in "iu":
        return array.astype(np.str_)
    return _string_cells(array, name.endswith("_bytes"))


def _string_cells(array: np.ndarray, as_bytes: bool) -> np.ndarray:
    flat = [str(v) for v in array.ravel().tolist()]
    if as_bytes:
        flat = ['{"b64": "' + base64.b64encode(v.encode()).decode() + '"}' for v in flat]
        return np.array(flat, dtype=np.str_).reshape(array.shape)
    return np.array([quote(v) for v in flat], dtype=np.str_).reshape(array.shape)


def collapse(cells: np.ndarray, axes: int, level: int, one_line: bool) -> np.ndarray:
    """Join the last ``axes`` axes of a str array into JSON arrays.

    ``level`` is the writer's depth at the outermost joined array; multi-line arrays indent
    their elements one level deeper than their brackets.
    """
    for axis in range(axes):
        depth = level + axes - 1 - axis
        cells = _join_last_axis(cells, depth, one_line)
    return cells


def _join_last_axis(cells: np.ndarray, depth: int, one_line: bool) -> np.ndarray:
    if one_line:
        opening, separator, closing = "[", ", ", "]"
    else:
        inner = "\n" + _indent(depth + 1)
        opening, separator, closing = "[" + inner, "," + inner, "\n" + _indent(depth) + "]"
    width = cells.shape[-1]
    if width == 0:
        return np.full(cells.shape[:-1], "[]", dtype=np.str_)
    lines = cells.reshape(-1, width)
    if lines.shape[0] <= width:  # few long lists: one join per list
        joined = [opening + separator.join(line) + closing for line in lines.tolist()]
        return np.array(joined, dtype=np.str_).reshape(cells.shape[:-1])
    text = np.strings.add(opening, cells[..., 0])  # many short lists: one add per column
    for column in range(1, width):
        text = np.strings.add(np.strings.add(text, separator), cells[..., column])
    return np.strings.add(text, closing)


def predictions_body(outputs: Mapping[str, np.ndarray]) -> bytes:
    """Row format: ``{"predictions": [...]}`` (several outputs: one object per row)."""
    rows = {n: collapse(cell_text(a, n), a.ndim - 1, 3, True) for n, a in outputs.items()}
    if len(rows) == 1:
        (only,) = rows.values()
        items = "[" + ", ".join(only.tolist()) + ("\n" + _indent(1) + "]" if only.size else "]")
    else:
        items = _row_objects(rows)
    return f'{{\n{_indent(1)}"predictions": {items}\n}}'.encode()


def _row_objects(rows: Mapping[str, np.ndarray]) -> str:
    size = next(iter(rows.values())).size
    if size == 0:
        return "[]"
    objects = np.full(size, "{", dtype=np.str_)
    for position, (name, text) in enumerate(rows.items()):
        lead = ("," if position else "") + "\n" + _indent(3) + quote(name) + ": "
        objects = np.strings.add(np.strings.add(objects, lead), text)
    objects = np.strings.add(objects, "\n" + _indent(2) + "}")
    inner = "\n" + _indent(2)
    return "[" + inner + ("," + inner).join(objects.tolist()) + "\n" + _indent(1) + "]"


def outputs_body(outputs: Mapping[str, np.ndarray]) -> bytes:
    """Columnar format: ``{"outputs": tensor}`` or ``{"outputs": {name: tensor, ...}}``."""
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        value = str(collapse(cell_text(array, name), array.ndim, 1, False))
    else:
        members = [
            _indent(2) + quote(n) + ": " + str(collapse(cell_text(a, n), a.ndim, 2, False))
            for n, a in outputs.items()
        ]
        value = "{\n" + ",\n".join(members) + "\n" + _indent(1) + "}"
    return f'{{\n{_indent(1)}"outputs": {value}\n}}'.encode()


def classify_body(labels: np.ndarray, scores: np.ndarray) -> bytes:
    """``{"results": [[[label, score], ...], ...]}``; labels and scores are (n, k)."""
    pairs = np.stack((cell_text(labels.astype(np.str_)), cell_text(scores)), axis=-1)
    examples = collapse(pairs, 2, 3, True)
    closing = "\n" + _indent(1) + "]" if examples.size else "]"
    return f'{{\n{_indent(1)}"results": [{", ".join(examples.tolist())}{closing}\n}}'.encode()


def regress_body(values: np.ndarray) -> bytes:
    """``{"results": [v1, v2, ...]}``."""
    items = ", ".join(cell_text(values.astype(np.float32)).tolist())
    return f'{{\n{_indent(1)}"results": [{items}]\n}}'.encode()


def error_body(message: str) -> bytes:
    # A message may echo a request's invalid UTF-8 (lone surrogates): replaced, never a 500.
    return f'{{\n{_indent(1)}"error": {quote(message)}\n}}'.encode(errors="replace")
