"""Which files a run scores and where each answer goes: ``x`` gives ``x.out`` in the output
folder, under the same path relative to the folder named on the command line, as Batch
Transform names its outputs under an S3 prefix. ``-`` is standard input, answered on
standard output. It owns naming only; reading is ``split``'s."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

from smserve.errors import ConfigError

STDIN = "-"
OUTPUT_SUFFIX = ".out"


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input: ``path`` None is standard input. ``relative`` names it in messages and
    gives its output name; ``output`` None means standard output."""

    path: Path | None
    relative: PurePath
    output: Path | None

    @property
    def size(self) -> int | None:
        return None if self.path is None else self.path.stat().st_size


def discover(inputs: Iterable[str], output_dir: Path | None) -> list[InputFile]:
    """Every file to score, in command-line order; folders are walked recursively in sorted
    order, skipping hidden files (ours in progress among them). Raises ConfigError."""
    found = [item for name in inputs for item in _expand(name, output_dir)]
    if not found:
        raise ConfigError("no input files: name files, folders or - (standard input)")
    _check_unique(found)
    return found


def _expand(name: str, output_dir: Path | None) -> Iterator[InputFile]:
    if name == STDIN:
        yield InputFile(None, PurePath("stdin"), None)
        return
    root = Path(name)
    if not root.exists():
        raise ConfigError(f"{name}: no such file or folder")
    if output_dir is None:
        raise ConfigError(f"{name}: --output DIR is needed for file inputs (only - needs none)")
    if root.is_file():
        yield _input(root, PurePath(root.name), output_dir)
    elif root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file() and _visible(p, root)):
            yield _input(path, path.relative_to(root), output_dir)
    else:
        raise ConfigError(f"{name}: neither a file nor a folder")


def _visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _input(path: Path, relative: PurePath, output_dir: Path) -> InputFile:
    return InputFile(path, relative, output_dir / f"{relative}{OUTPUT_SUFFIX}")


def _check_unique(found: list[InputFile]) -> None:
    seen: dict[Path | None, PurePath] = {}
    for item in found:
        if item.output in seen and item.output is not None:
            raise ConfigError(
                f"{seen[item.output]} and {item.relative} would both be written to {item.output}"
            )
        seen[item.output] = item.relative
