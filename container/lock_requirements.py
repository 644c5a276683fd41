"""Write container/requirements.lock: every distribution the image can install, pinned.

    .venv/bin/python container/lock_requirements.py      # refresh (needs the package index)

pip resolves, without installing anything, each image variant from pyproject.toml (the default
xgboost-cpu build, the xgboost GPU build, the skops extra) and the wheel stage's build tools
([build-system].requires); the results are merged into one constraints file. The Dockerfile
installs with ``-c requirements.lock``, so two builds a week apart get the same versions. Run it
on Linux x86-64 with CPython 3.11, the image's platform, so pip picks the wheels the image gets.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from runtime_requirements import normalize, parse_replacements, runtime_requirements

HERE = Path(__file__).resolve().parent
PYPROJECT = HERE.parent / "pyproject.toml"
LOCK = HERE / "requirements.lock"
COMMAND = ".venv/bin/python container/lock_requirements.py"
# (xgboost distribution, extras) for each variant the Dockerfile's build arguments allow (the
# image always installs the grpc extra).
VARIANTS = (
    ("xgboost-cpu", ("grpc",)),
    ("xgboost", ("grpc",)),
    ("xgboost-cpu", ("grpc", "skops")),
)


def variant_requirements(pyproject: Mapping[str, object]) -> list[list[str]]:
    """The requirement lists to resolve: one per image variant, then the build tools."""
    project = pyproject["project"]
    build = pyproject["build-system"]
    assert isinstance(project, Mapping)
    assert isinstance(build, Mapping)
    lists = [
        runtime_requirements(project, extras, parse_replacements([f"xgboost={xgboost}"]))
        for xgboost, extras in VARIANTS
    ]
    return [*lists, list(build["requires"])]


def resolve(requirements: Sequence[str]) -> dict[str, str]:
    """{normalized name: version} of what pip would install for ``requirements`` here."""
    with tempfile.TemporaryDirectory() as scratch:
        listing = Path(scratch, "requirements.txt")
        listing.write_text("\n".join(requirements) + "\n")
        report = Path(scratch, "report.json")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed"]
            + ["--disable-pip-version-check", "--report", str(report), "-r", str(listing)],
            check=True,
        )
        installs = json.loads(report.read_text())["install"]
    return {normalize(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}


def merge(resolutions: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """One pin per name; raises ValueError when two variants chose different versions."""
    pins: dict[str, str] = {}
    for resolution in resolutions:
        for name, version in resolution.items():
            if pins.setdefault(name, version) != version:
                raise ValueError(f"{name}: variants resolved {pins[name]} and {version}")
    return dict(sorted(pins.items()))


def render(pins: Mapping[str, str]) -> str:
    header = [
        "# Pinned versions of everything the image installs (pip constraints file).",
        f"# Generated from pyproject.toml by `{COMMAND}`; do not edit by hand.",
        f"# Resolved on CPython {platform.python_version()}, {platform.system()} "
        f"{platform.machine()}.",
    ]
    return "\n".join([*header, *(f"{name}=={version}" for name, version in pins.items())]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=LOCK)
    args = parser.parse_args(argv)
    if sys.version_info[:2] != (3, 11) or platform.machine() != "x86_64":
        print("lock_requirements: run on CPython 3.11, x86_64 (the image's platform)")
        return 2
    with PYPROJECT.open("rb") as handle:
        pyproject = tomllib.load(handle)
    pins = merge(resolve(r) for r in variant_requirements(pyproject))
    args.output.write_text(render(pins))
    print(f"lock_requirements: wrote {len(pins)} pins to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
