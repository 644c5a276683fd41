"""A model version's lifecycle state, as the repository tracks it for every door.

The states and their numbers are TF Serving's ``ModelVersionStatus.State`` (the first door
that reported them); other doors read them as "ready" (AVAILABLE) or not."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class State(enum.Enum):
    """Where one version is in its life (the numbers are TF Serving's proto's)."""

    UNKNOWN = 0
    START = 10
    LOADING = 20
    AVAILABLE = 30
    UNLOADING = 40
    END = 50


@dataclass(frozen=True, slots=True)
class VersionStatus:
    """One version's state; a failed load is END with a non-OK ``error_code``."""

    version: int
    state: State
    error_code: str = "OK"
    error_message: str = ""

    @property
    def ready(self) -> bool:
        return self.state is State.AVAILABLE
