"""Settings declared outside ``config``: a door's own (``DoorSpec.settings``).

A door that needs a setting of its own declares it beside its code: the variable, how it is
read (a typed, checked read of the environment that raises ConfigError naming the variable),
its default and one line of documentation. ``door_table.read_settings`` reads every door's
declared settings into ``Settings.declared`` when the server starts, and
``door_table.settings_reference`` writes the rows of the settings reference
(docs/settings.md) from the same declarations, so the reader, the reference and the checks
see one description."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from smserve.config.reader import Reader

if TYPE_CHECKING:
    from smserve.config import Settings

T = TypeVar("T")
Values = tuple[tuple[str, object], ...]  # variable -> value, as Settings.declared holds them


@dataclass(frozen=True, slots=True)
class Declared(Generic[T]):
    """One declared setting: ``env`` (the variable), ``read`` (its value from the environment,
    its default when unset), ``default`` and ``doc`` (its row in the settings reference)."""

    env: str
    read: Callable[[Reader], T]
    default: str
    doc: str

    def of(self, settings: Settings) -> T:
        """Its value in ``settings``: as read at start, else its default."""
        for name, value in settings.declared:
            if name == self.env:
                return cast(T, value)
        return self.read(Reader({}))

    def row(self) -> str:
        """Its row in the settings reference's table."""
        return f"| `{self.env}` | {self.default} | {self.doc} |"


def read(environ: Mapping[str, str], declared: Sequence[Declared[Any]]) -> Values:
    """Every ``declared`` setting read from ``environ`` (ConfigError names a bad one)."""
    env = Reader(environ)
    return tuple((setting.env, setting.read(env)) for setting in declared)


def replaced(values: Values, setting: Declared[T], value: T) -> Values:
    """``values`` with ``setting`` set to ``value``."""
    return (*((name, v) for name, v in values if name != setting.env), (setting.env, value))
