"""Types of the C extension ``_ubjson.c`` (see there and ``xgboost.ubjson``)."""

from typing import Any

class TypedArray:
    format: str
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def decode(data: bytes, /) -> Any: ...
