"""The multi-model registry's shared state: one small JSON file every worker reads.

``registry.json`` lists the registered models (name, url, resolved path, estimated size and a
load id that changes when a name is registered again). Writers hold an exclusive ``flock`` on
``registry.lock`` for their whole read-check-write, and replace the file atomically
(write a temporary file, then rename), so readers never see half a file and need no lock.
Readers notice a change by one ``stat`` (inode, size, modification time in ns).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

Signature = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Entry:
    """One registered model."""

    name: str
    url: str
    path: str
    size_bytes: int
    load_id: str


class StateFile:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "registry.json"
        self.lock_path = directory / "registry.lock"

    def signature(self) -> Signature | None:
        """What changes whenever the file is replaced (None: nothing registered yet)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def read(self) -> dict[str, Entry]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        models = json.loads(text)["models"]
        return {name: Entry(**fields) for name, fields in models.items()}

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive among every process using this directory."""
        with open(self.lock_path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def write(self, entries: Mapping[str, Entry]) -> None:
        """Replace the file (call while ``locked``)."""
        text = json.dumps({"models": {n: asdict(e) for n, e in sorted(entries.items())}})
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".registry-")
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, self.path)
