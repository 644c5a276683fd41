"""Hyperparameters: ``hyperparameters.json`` read into typed values with errors naming the key.

SageMaker writes every value as a string. Numbers and booleans written by hand are accepted
too. Each read marks its key as used, so :meth:`Hyperparameters.check_all_used` can reject keys
no algorithm understood. Keys starting with ``sagemaker_`` or ``_`` (the platform's own, such
as ``_tuning_objective_metric``) are never reported.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from smserve.training.failure import TrainingError

logger = logging.getLogger(__name__)
T = TypeVar("T")
PLATFORM_PREFIXES = ("sagemaker_", "_")


class Hyperparameters:
    """String hyperparameters with typed, strict getters."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {key: value.strip() for key, value in values.items()}
        self._used: set[str] = set()

    @classmethod
    def from_file(cls, path: Path) -> Hyperparameters:
        """Read ``path``; a missing file means no hyperparameters."""
        if not path.is_file():
            return cls({})
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise TrainingError(f"{path} is not a readable JSON file: {exc}") from exc
        if not isinstance(raw, dict):
            raise TrainingError(f"{path} must hold a JSON object of name-value pairs")
        return cls({str(key): _as_text(str(key), value) for key, value in raw.items()})

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def text(self, name: str) -> str | None:
        """The raw value, or None when absent or empty."""
        self._used.add(name)
        return self._values.get(name) or None

    def _convert(self, name: str, cast: Callable[[str], T], what: str) -> T | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return cast(value)
        except ValueError:
            raise TrainingError(f"hyperparameter {name}={value!r} is not {what}") from None

    def optional_integer(self, name: str, minimum: int | None = None) -> int | None:
        value = self._convert(name, _integer, "an integer")
        _check_range(name, value, minimum, None)
        return value

    def integer(self, name: str, default: int, minimum: int | None = None) -> int:
        value = self.optional_integer(name, minimum)
        return default if value is None else value

    def required_integer(self, name: str, minimum: int | None = None) -> int:
        value = self.optional_integer(name, minimum)
        if value is None:
            raise TrainingError(f"hyperparameter {name} is required")
        return value

    def optional_number(
        self, name: str, minimum: float | None = None, maximum: float | None = None
    ) -> float | None:
        value = self._convert(name, _number, "a number")
        _check_range(name, value, minimum, maximum)
        return value

    def optional_choice(self, name: str, choices: Iterable[str]) -> str | None:
        value = self.text(name)
        options = tuple(choices)
        if value is not None and value.lower() not in options:
            raise TrainingError(
                f"hyperparameter {name}={value!r} must be one of: {', '.join(options)}"
            )
        return None if value is None else value.lower()

    def names(self, name: str) -> tuple[str, ...] | None:
        """A list written as JSON (``["msd", "ssd"]``) or comma-separated (``msd,ssd``)."""
        value = self.text(name)
        return None if value is None else _parse_names(name, value)

    def ignore(self, names: Iterable[str]) -> None:
        """Accept ``names`` without using them, logging each one that was set."""
        for name in names:
            if self.text(name) is not None:
                logger.info("hyperparameter %s is accepted but has no effect here", name)

    def check_all_used(self, algorithm: str) -> None:
        """Raise naming every key that no getter read."""
        unknown = sorted(
            key
            for key in self._values
            if key not in self._used and not key.startswith(PLATFORM_PREFIXES)
        )
        if unknown:
            raise TrainingError(f"unknown hyperparameter(s) for {algorithm}: {', '.join(unknown)}")


def _as_text(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise TrainingError(f"hyperparameter {name} must be a string, not {type(value).__name__}")


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        number = float(text)  # HPO integer ranges may arrive as "10.0"
        if not number.is_integer():
            raise
        return int(number)


def _number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _check_range(
    name: str, value: float | None, minimum: float | None, maximum: float | None
) -> None:
    if value is None:
        return
    if minimum is not None and value < minimum:
        raise TrainingError(f"hyperparameter {name}={value} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise TrainingError(f"hyperparameter {name}={value} must be at most {maximum}")


def _parse_names(name: str, value: str) -> tuple[str, ...]:
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value.strip("[]").split(",")
    if isinstance(parsed, str):
        parsed = [parsed]
    if not isinstance(parsed, list) or not all(isinstance(item, str) for item in parsed):
        raise TrainingError(f"hyperparameter {name}={value!r} is not a list of names")
    names = tuple(item.strip().strip("'\"").strip().lower() for item in parsed)
    if not all(names):
        raise TrainingError(f"hyperparameter {name}={value!r} has an empty entry")
    return names
