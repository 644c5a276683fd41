"""The house rules (DEVELOPERS.md, "Rules"), checked over every module of the package, every
subpackage included (``http/upstream/``, ``algorithms/xgboost/``, ``scoring/ray/`` ...): a
rule that holds only where a test happened to look is not a rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import smserve
from smserve import door_table

SOURCE = Path(smserve.__file__).parent
MODULES = sorted(SOURCE.rglob("*.py"))
MAX_LINES = 300


def package(path: Path) -> str:
    """``smserve.http.upstream.worker`` for ``.../smserve/http/upstream/worker.py``."""
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (a function's lazy import included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def under(path: Path, *folders: str) -> bool:
    return path.relative_to(SOURCE).parts[0] in folders


def imports_any(path: Path, prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        m for m in imported(path) if m in prefixes or m.startswith(tuple(f"{p}." for p in prefixes))
    )


def test_the_walk_sees_the_subpackages() -> None:
    seen = {package(path) for path in MODULES}
    assert {"smserve.http.upstream", "smserve.algorithms.xgboost", "smserve.scoring.ray"} <= seen


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_flask_is_imported_by_the_app_factory_alone(path: Path) -> None:
    # Flask is the application object (http/app.py) and nothing more: no module of the
    # request path (the dispatcher, its rules and replies, the workers) imports Flask, and no
    # module at all imports Werkzeug (media.py parses headers itself; Werkzeug's import brings
    # its development server, which training and scoring would load for nothing)
    if path != SOURCE / "http" / "app.py":
        assert imports_any(path, ("flask", "werkzeug")) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_no_module_is_a_grab_bag_or_over_the_size_limit(path: Path) -> None:
    assert path.stem not in ("utils", "helpers")
    assert len(path.read_text().splitlines()) <= MAX_LINES


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_imports_point_inward(path: Path) -> None:
    doors = tuple(f"smserve.{door.name}" for door in door_table.DOORS)
    if under(path, "http", "frontend"):  # reach doors through door_table only
        assert imports_any(path, doors) == [], "reach doors by door_table"
    if under(path, "codecs"):
        assert imports_any(path, ("smserve.algorithms",)) == []
    if under(path, "algorithms"):
        assert imports_any(path, ("smserve.codecs", "smserve.http", *doors)) == []
    if under(path, "codecs", "algorithms", "repository", "metrics", "config"):
        assert imports_any(path, ("flask", "smserve.http", "smserve.frontend")) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_scipy_is_imported_through_scipy_sparse_alone(path: Path) -> None:
    # smserve/scipy_sparse.py imports scipy.sparse without the numpy modules scipy's array-API
    # layer would load for nothing; a module importing scipy itself could import it first
    if path != SOURCE / "scipy_sparse.py":
        assert imports_any(path, ("scipy",)) == [], "from smserve.scipy_sparse import sparse"
