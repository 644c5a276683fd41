"""Where answers are written: an output file appears under its final name only once it is
complete (written to a hidden temporary file beside it, then renamed), so a rerun with
``--skip-existing`` can trust every ``.out`` it finds (an S3 output is uploaded once complete,
see ``s3``). Standard output is written as it goes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO, Protocol

from smserve.scoring.s3 import S3Object, S3Upload


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    def commit(self) -> None: ...

    def discard(self) -> None: ...


class AtomicFile:
    """``.<name>.tmp-<pid>`` beside ``path`` until ``commit`` renames it to ``path``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        self._file: BinaryIO = self.temporary.open("wb")

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def commit(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())  # the rename must not land before the bytes do
        self._file.close()
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        self._file.close()
        self.temporary.unlink(missing_ok=True)


class StandardOutput:
    """Answers to ``-`` go to standard output as they are ready; nothing can be taken back."""

    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)

    def commit(self) -> None:
        sys.stdout.buffer.flush()

    def discard(self) -> None:
        sys.stdout.buffer.flush()


def open_sink(path: Path | S3Object | None) -> Sink:
    if isinstance(path, S3Object):
        return S3Upload(path)
    return StandardOutput() if path is None else AtomicFile(path)
