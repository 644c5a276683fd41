"""Typed, strict reads of one environment mapping (``smserve.config``'s only way in)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from smserve.errors import ConfigError

T = TypeVar("T")


class Reader:
    """Typed, strict reads of one environment mapping; errors name the variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def text(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def lowered(self, name: str) -> str | None:
        """A name matched in any case, checked where it is used (an algorithm's name: by the
        table of algorithms, which config must not import)."""
        value = self.text(name)
        return value.lower() if value else None

    def _convert(self, name: str, cast: Callable[[str], T], what: str) -> T | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return cast(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not {what}") from None

    def optional_integer(self, name: str, minimum: int = 0) -> int | None:
        value = self._convert(name, int, "an integer")
        if value is not None and value < minimum:
            raise ConfigError(f"{name}={value} must be at least {minimum}")
        return value

    def integer(self, name: str, default: int, minimum: int = 0) -> int:
        value = self.optional_integer(name, minimum)
        return default if value is None else value

    def number(self, name: str, default: float, minimum: float = 0.0) -> float:
        value = self._convert(name, float, "a number")
        if value is not None and value < minimum:
            raise ConfigError(f"{name}={value} must be at least {minimum}")
        return default if value is None else value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.text(name)
        if value is None:
            return default
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ConfigError(f"{name}={value!r} is not a boolean (use true or false)")

    def optional_choice(self, name: str, choices: tuple[str, ...]) -> str | None:
        value = self.text(name)
        if value is None:
            return None
        matched = {c.lower(): c for c in choices}.get(value.lower())
        if matched is None:
            raise ConfigError(f"{name}={value!r} must be one of: {', '.join(choices)}")
        return matched

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        return self.optional_choice(name, choices) or default

    def optional_path(self, name: str) -> Path | None:
        value = self.text(name)
        return None if value is None else Path(value)

    def path(self, name: str, default: Path) -> Path:
        return self.optional_path(name) or default

    def prefixed_paths(self, prefix: str) -> dict[str, Path]:
        """``{suffix.lower(): path}`` for every non-empty ``<prefix><SUFFIX>`` variable."""
        return {
            key[len(prefix) :].lower(): Path(value.strip())
            for key, value in self._environ.items()
            if key.startswith(prefix) and value.strip()
        }
