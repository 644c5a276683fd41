"""Helpers for the container tests: the repository's paths and the container/ scripts loaded as
modules (container/ is a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
CONTAINER = REPO / "container"
LOCAL_TEST = REPO / "local_test"


def load(path: Path) -> ModuleType:
    """Import the script at ``path`` under the name ``smserve_script_<stem>`` (cached).

    As `python path` does, the script's own folder is first on sys.path while it is imported, so
    its imports of sibling modules (container/sagemaker_api.py) resolve; it is removed after."""
    name = f"smserve_script_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module
