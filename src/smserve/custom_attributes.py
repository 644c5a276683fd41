"""SageMaker CustomAttributes (what boto3's ``invoke_endpoint(CustomAttributes=...)`` sends):
the ``outputs`` attribute that selects a request's outputs, and the answer's attributes.

SageMaker passes the value through as an opaque string. Here it is a ``;``-separated list of
``name=value`` attributes; only ``outputs`` means something (``outputs=<key>,<key>``, names
compared case-insensitively), every other attribute is ignored.
"""

from __future__ import annotations

from smserve.errors import InvalidInput

OUTPUTS = "outputs"


def requested_outputs(attributes: str | None, valid: tuple[str, ...]) -> tuple[str, ...] | None:
    """The keys ``outputs=`` names (lower-cased, distinct, in order), or None without one.

    Raises InvalidInput, listing ``valid`` (the keys this model offers), when ``outputs`` is
    given twice, is empty or malformed, or names a key not in ``valid``."""
    values = [value for name, value in _pairs(attributes or "") if name == OUTPUTS]
    if not values:
        return None
    if len(values) > 1:
        raise _refused("custom attributes name outputs more than once; name it once", valid)
    value = values[0]
    keys = [key.strip().lower() for key in (value or "").split(",")]
    if value is None or not all(keys):
        given = OUTPUTS if value is None else f"{OUTPUTS}={value}"
        raise _refused(
            f"custom attribute '{_excerpt(given)}' is empty or malformed; write "
            "outputs=<key>,<key> (no empty key)",
            valid,
        )
    check_outputs(keys, valid)
    return tuple(dict.fromkeys(keys))


def check_outputs(keys: list[str] | tuple[str, ...], valid: tuple[str, ...]) -> None:
    """Raises InvalidInput naming ``keys`` that are not in ``valid``, and listing ``valid``."""
    unknown = [key for key in keys if key not in valid]
    if unknown:
        named = _excerpt(", ".join(dict.fromkeys(unknown)))
        raise _refused(f"custom attribute outputs names unknown outputs: {named}", valid)


def _refused(problem: str, valid: tuple[str, ...]) -> InvalidInput:
    offered = ", ".join(valid) if valid else "none (this model's outputs are fixed)"
    return InvalidInput(f"{problem}; valid outputs for this model: {offered}")


def _excerpt(text: str, limit: int = 80) -> str:
    """What the client sent, cut short: error messages never echo a whole header."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def applied(keys: tuple[str, ...]) -> str:
    """The answer's attributes: which outputs it holds."""
    return f"{OUTPUTS}={','.join(keys)}"


def _pairs(attributes: str) -> list[tuple[str, str | None]]:
    """(lower-cased name, value or None when there is no ``=``) per attribute."""
    parts = (part.partition("=") for part in attributes.split(";"))
    return [(name.strip().lower(), value if sep else None) for name, sep, value in parts]
