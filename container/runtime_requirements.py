"""Print the runtime requirements of smserve, one per line, for `pip install -r`.

The image build uses it so the dependency layer is installed from pyproject.toml alone (cached
until the dependencies change) and so one distribution can be swapped for another that provides
the same import package: `xgboost` -> `xgboost-cpu` (the CPU-only wheel, without the CUDA runtime
and NCCL that the plain `xgboost` wheel pulls in on Linux).

    python runtime_requirements.py pyproject.toml --replace xgboost=xgboost-cpu --extra skops

Standard library only: it runs in the bare base image before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# PEP 508: the distribution name is the leading run of letters, digits, '.', '_' and '-'.
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_name(requirement: str) -> tuple[str, str]:
    """(name, rest) of a PEP 508 requirement string; rest keeps extras, specifiers, markers."""
    match = _NAME.match(requirement)
    if match is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    return match.group(1), requirement[match.end() :]


def parse_replacements(pairs: Iterable[str]) -> dict[str, str]:
    """{'xgboost': 'xgboost-cpu'} from ['xgboost=xgboost-cpu']; an empty target keeps the name."""
    replacements = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip():
            raise ValueError(f"--replace expects OLD=NEW, got {pair!r}")
        replacements[normalize(old)] = new.strip() or old.strip()
    return replacements


def runtime_requirements(
    project: Mapping[str, object], extras: Sequence[str], replacements: Mapping[str, str]
) -> list[str]:
    """The project's dependencies plus those of ``extras``, with names replaced."""
    requirements = list(_strings(project.get("dependencies", []), "dependencies"))
    optional = project.get("optional-dependencies", {})
    if not isinstance(optional, Mapping):
        raise ValueError("[project.optional-dependencies] is not a table")
    for extra in extras:
        if extra not in optional:
            raise ValueError(f"unknown extra {extra!r}; known: {', '.join(sorted(optional))}")
        requirements.extend(_strings(optional[extra], f"optional-dependencies.{extra}"))
    return _dedupe(_replace(r, replacements) for r in requirements)


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"[project] {where} is not a list of strings")
    return value


def _replace(requirement: str, replacements: Mapping[str, str]) -> str:
    name, rest = split_name(requirement)
    return replacements.get(normalize(name), name) + rest.rstrip()


def _dedupe(requirements: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for requirement in requirements:
        seen.setdefault(requirement.strip(), None)
    return list(seen)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyproject", type=Path)
    parser.add_argument("--replace", action="append", default=[], metavar="OLD=NEW")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME")
    args = parser.parse_args(argv)
    with args.pyproject.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    extras = [e for raw in args.extra for e in raw.replace(",", " ").split()]
    try:
        lines = runtime_requirements(project, extras, parse_replacements(args.replace))
    except ValueError as error:
        print(f"runtime_requirements: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
