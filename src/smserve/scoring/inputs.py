"""Which files a run scores and where each answer goes: ``x`` gives ``x.out`` in the output
folder, under the same path relative to the folder named on the command line, as Batch
Transform names its outputs under an S3 prefix. An input or ``--output`` may be an ``s3://``
URL (a listed prefix is scored like a folder). ``-`` is standard input, answered on standard
output. It owns naming only; reading is ``shards``' and ``split``'s."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

from smserve.errors import ConfigError
from smserve.scoring.s3 import S3Object, is_s3, listing, parse

STDIN = "-"
OUTPUT_SUFFIX = ".out"

Location = Path | S3Object  # a local file, or an object in S3


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input: ``path`` None is standard input. ``relative`` names it in messages and
    gives its output name; ``output`` None means standard output."""

    path: Location | None
    relative: PurePath
    output: Location | None

    @property
    def size(self) -> int | None:
        if isinstance(self.path, S3Object):
            return self.path.size()
        return None if self.path is None else self.path.stat().st_size


def discover(
    inputs: Iterable[str], output: str | Path | None, s3_endpoint_url: str | None = None
) -> list[InputFile]:
    """Every file to score, in command-line order; folders and S3 prefixes are walked
    recursively in sorted order, skipping hidden names (ours in progress among them).
    Raises ConfigError."""
    output_dir = None if output is None else location(str(output), s3_endpoint_url)
    found = [item for name in inputs for item in _expand(name, output_dir, s3_endpoint_url)]
    if not found:
        raise ConfigError("no input files: name files, folders or - (standard input)")
    _check_unique(found)
    return found


def location(name: str, s3_endpoint_url: str | None = None) -> Location:
    return parse(name, s3_endpoint_url) if is_s3(name) else Path(name)


def _expand(name: str, output_dir: Location | None, endpoint: str | None) -> Iterator[InputFile]:
    if name == STDIN:
        yield InputFile(None, PurePath("stdin"), None)
        return
    if not is_s3(name) and not Path(name).exists():
        raise ConfigError(f"{name}: no such file or folder")
    if output_dir is None:
        raise ConfigError(f"{name}: --output DIR is needed for file inputs (only - needs none)")
    if is_s3(name):
        for item, relative in listing(parse(name, endpoint)):
            yield _input(item, relative, output_dir)
        return
    root = Path(name)
    if root.is_file():
        yield _input(root, PurePath(root.name), output_dir)
    elif root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file() and _visible(p, root)):
            yield _input(path, path.relative_to(root), output_dir)
    else:
        raise ConfigError(f"{name}: neither a file nor a folder")


def _visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _input(path: Location, relative: PurePath, output_dir: Location) -> InputFile:
    return InputFile(path, relative, output_dir / f"{relative.as_posix()}{OUTPUT_SUFFIX}")


def _check_unique(found: list[InputFile]) -> None:
    seen: dict[Location | None, PurePath] = {}
    for item in found:
        if item.output in seen and item.output is not None:
            raise ConfigError(
                f"{seen[item.output]} and {item.relative} would both be written to {item.output}"
            )
        seen[item.output] = item.relative
