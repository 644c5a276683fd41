"""container/requirements.lock: pins every requirement of every image variant, within the
ranges pyproject.toml allows, and the Dockerfile installs through it."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.container.container_modules import CONTAINER, REPO, load

lock = load(CONTAINER / "lock_requirements.py")


def pins() -> dict[str, str]:
    lines = (CONTAINER / "requirements.lock").read_text().splitlines()
    entries = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in entries}


def requirement_lists() -> list[list[str]]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        lists: list[list[str]] = lock.variant_requirements(tomllib.load(handle))
    return lists


@pytest.mark.parametrize(
    "requirement", sorted({r for rs in requirement_lists() for r in rs}), ids=lambda r: r
)
def test_every_requirement_is_pinned_within_its_range(requirement: str) -> None:
    parsed = Requirement(requirement)
    version = pins().get(canonicalize_name(parsed.name))
    assert version is not None, f"{parsed.name} is not in the lock: run {lock.COMMAND}"
    assert parsed.specifier.contains(version, prereleases=True), (
        f"{parsed.name}=={version} is outside {parsed.specifier}: run {lock.COMMAND}"
    )


def test_the_lock_says_how_to_refresh_it() -> None:
    assert lock.COMMAND in (CONTAINER / "requirements.lock").read_text()


def test_variants_that_disagree_are_an_error() -> None:
    assert lock.merge([{"numpy": "2.0"}, {"numpy": "2.0", "scipy": "1.1"}]) == {
        "numpy": "2.0",
        "scipy": "1.1",
    }
    with pytest.raises(ValueError, match="numpy: variants resolved 2.0 and 2.1"):
        lock.merge([{"numpy": "2.0"}, {"numpy": "2.1"}])


def test_every_pip_install_in_the_dockerfile_is_constrained_by_the_lock() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    steps = [c.split("\n\n")[0] for c in dockerfile.split("\nRUN ")[1:]]
    pip_installs = [step for step in steps if re.search(r"pip\b.* install ", step, re.DOTALL)]
    assert len(pip_installs) == 3
    for step in pip_installs:
        assert "-c /tmp/requirements.lock" in step or "--no-deps" in step, step
    assert "container/requirements.lock" in (REPO / ".dockerignore").read_text()
