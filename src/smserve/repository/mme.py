"""Multi-model endpoints: the registry of models loaded through ``POST /models``.

Worker consistency. gunicorn runs several worker processes, and a load or unload request
reaches only one of them. The registry therefore lives in a state file in the server's run
directory (``mme_state``), the one source of truth:

* load and unload take an exclusive file lock, re-read the file, check (409 already
  registered, 404 unknown, 507 over the memory budget), load the model in this worker, then
  write the file, all under the lock, so two workers can never both register one name;
* before serving any request that names a model (invoke, list, describe, and the TF Serving
  routes), a worker ``stat``s the file; if it changed, it re-reads it, drops the models it no
  longer lists and notices re-registered names. A model registered by another worker is
  loaded here on its first request.

So a model loaded through one worker is served by every worker from the next request on,
and after an unload no worker answers for it. Each worker holds its own copy of each model.

Model names (the ``/models/<name>`` routes, ``X-Amzn-SageMaker-Target-Model``, the TF Serving
and V2 routes) are 1 to MAX_NAME_LENGTH characters, printable (no control, format or line
characters), with no ``/`` or ``\\``, no ``..`` and not ``.``; any other name is a 400 naming
the rule, wherever it is used.

Containment: a model's ``url`` and every file its load lists, sizes or opens resolve, links
followed, beneath SMSERVE_MODELS_DIR, checked at each open (``algorithms.confinement``); a
path, ``..`` or link that leads outside is a 400 before anything outside is touched.

Memory budget (SMSERVE_MEMORY_BUDGET_MB; by default derived from the container's memory
limit, ``resources``): what a model costs a worker is estimated from its files before any is
parsed (``algorithms.footprint``: what it holds once loaded, and at the peak of loading it).
A load whose peak would not fit beside the models already registered is refused with 507 and
nothing loaded, so the platform can unload something and retry; the registry records what
the model holds once loaded. The budget is per worker: every worker holds every model.
"""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path

from smserve.algorithms import catalog
from smserve.algorithms.confinement import Outside, confined, resolve_directory
from smserve.algorithms.footprint import Footprint
from smserve.errors import (
    Conflict,
    InsufficientStorage,
    InvalidInput,
    ModelLoadError,
    ModelNotFound,
    ModelNotReady,
    UnknownLabel,
)
from smserve.failures import load_message
from smserve.repository.loading import ModelLoader, ServedModel
from smserve.repository.mme_state import Entry, Signature, StateFile
from smserve.repository.status import State, VersionStatus
from smserve.repository.versions import SINGLE_VERSION

logger = logging.getLogger(__name__)
MIB = 1024 * 1024
MAX_NAME_LENGTH = 1024  # SageMaker's limit on a TargetModel
_FORBIDDEN_IN_NAMES = ("/", "\\", "..")


class MultiModelRegistry:
    """Models registered by name, version 1 each (``repository.modes.Models``)."""

    def __init__(self, loader: ModelLoader, state_dir: Path) -> None:
        settings = loader.settings
        self.loader = loader
        self.models_dir = settings.models_dir
        self.budget_bytes = settings.memory_budget_bytes
        self.state = StateFile(state_dir)
        self._lock = threading.RLock()
        self._seen: Signature | None = None
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, tuple[str, ServedModel]] = {}  # name -> (load id, model)
        self._failed: dict[str, tuple[str, str]] = {}  # name -> (load id, error)

    # -- the platform's calls ------------------------------------------------------------

    def entries(self) -> dict[str, Entry]:
        self.sync()
        return dict(self._entries)

    def entry(self, name: str) -> Entry:
        check_name(name)
        entry = self.entries().get(name)
        if entry is None:
            raise ModelNotFound(name)
        return entry

    def load(self, name: str, url: str) -> Entry:
        """Register and load ``name`` from ``url``; raises Conflict, InsufficientStorage or
        InvalidInput (a path outside SMSERVE_MODELS_DIR, or files that do not load)."""
        check_name(name)
        path = self._resolve(url)
        cost = self._estimate(path)
        with self.state.locked():
            entries = self.state.read()
            if name in entries:
                raise Conflict(f"Model {name} is already registered.")
            self._check_budget(entries, name, cost)
            entry = Entry(name, url, str(path), cost.resident, uuid.uuid4().hex)
            served = self._load(entry)
            self.state.write({**entries, name: entry})
        with self._lock:
            self._loaded[name] = (entry.load_id, served)
        logger.info("multi-model: loaded %s from %s (~%s MiB)", name, path, _mib(cost.resident))
        return entry

    def unload(self, name: str) -> None:
        check_name(name)
        with self.state.locked():
            entries = self.state.read()
            if name not in entries:
                raise ModelNotFound(name)
            del entries[name]
            self.state.write(entries)
        self.sync()
        self.loader.observer.model_unloaded()
        logger.info("multi-model: unloaded %s", name)

    def model(self, name: str) -> ServedModel:
        """The loaded model ``name``, loading it in this worker on first use."""
        entry = self.entry(name)
        with self._lock:
            loaded = self._loaded.get(name)
            if loaded is not None and loaded[0] == entry.load_id:
                return loaded[1]
            failed = self._failed.get(name)
            if failed is not None and failed[0] == entry.load_id:
                raise ModelNotReady(f"Model {name} failed to load in this worker: {failed[1]}")
            return self._load_here(entry)

    # -- keeping this worker in step -----------------------------------------------------

    def sync(self) -> None:
        """Re-read the state file if it changed since this worker last read it."""
        signature = self.state.signature()
        if signature == self._seen:
            return
        with self._lock:
            entries = self.state.read()
            self._seen = signature
            self._entries = entries
            for name, (load_id, _) in list(self._loaded.items()):
                if name not in entries or entries[name].load_id != load_id:
                    del self._loaded[name]

    def _load_here(self, entry: Entry) -> ServedModel:
        try:
            served = self._load(entry)
        except InvalidInput as exc:
            self._failed[entry.name] = (entry.load_id, exc.message)
            raise ModelNotReady(f"Model {entry.name} failed to load: {exc.message}") from None
        self._loaded[entry.name] = (entry.load_id, served)
        return served

    def _load(self, entry: Entry) -> ServedModel:
        try:
            return self.loader.load(
                entry.name, SINGLE_VERSION, Path(entry.path), None, within=self.models_dir
            )
        except ModelLoadError as exc:
            raise InvalidInput(f"Unable to load model {entry.name}: {load_message(exc)}") from None

    def _resolve(self, url: str) -> Path:
        """The model folder ``url`` names (relative to SMSERVE_MODELS_DIR, or absolute
        beneath it), resolved without touching anything outside it."""
        try:
            with confined(self.models_dir):
                return resolve_directory(Path(url))
        except ValueError as exc:  # a NUL byte: the OS's refusal is the client's mistake too
            raise InvalidInput(f"url {url!r} is not a usable path: {exc}") from None
        except Outside as exc:
            raise InvalidInput(
                f"url {url!r} leads outside the models directory {self.models_dir} "
                f"(SMSERVE_MODELS_DIR): {exc}"
            ) from None
        except FileNotFoundError:
            raise InvalidInput(f"url {url!r} does not exist in {self.models_dir}") from None
        except OSError as exc:  # NotADirectoryError, permissions
            raise InvalidInput(f"url {url!r} is not a readable model folder: {exc}") from None

    def _estimate(self, path: Path) -> Footprint:
        try:
            with confined(self.models_dir):
                return catalog.estimate(self.loader.settings, path)
        except ModelLoadError as exc:
            raise InvalidInput(f"Unable to load model from {path}: {load_message(exc)}") from None

    def _check_budget(self, entries: dict[str, Entry], name: str, cost: Footprint) -> None:
        """507 unless loading the model (its peak) fits beside the models already loaded."""
        if self.budget_bytes is None:
            return
        used = sum(e.size_bytes for e in entries.values())
        if used + cost.peak > self.budget_bytes:
            self.loader.observer.model_refused()
            raise InsufficientStorage(
                f"Cannot load model {name} (~{_mib(cost.resident)} MiB loaded, "
                f"~{_mib(cost.peak)} MiB while loading): {_mib(used)} MiB of the "
                f"{_mib(self.budget_bytes)} MiB budget (SMSERVE_MEMORY_BUDGET_MB) is in use; "
                "unload a model first"
            )

    # -- what every door reads (``repository.modes.Models``) ------------------------------

    @property
    def default_model(self) -> None:
        """None: every request names its model."""
        return None

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.entries()))

    def resolve(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> ServedModel:
        self._check(name, version, label)
        return self.model(name)

    def statuses(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> list[VersionStatus]:
        self._check(name, version, label)
        try:
            self.model(name)
        except ModelNotReady as exc:
            return [VersionStatus(SINGLE_VERSION, State.END, "INVALID_ARGUMENT", exc.message)]
        return [VersionStatus(SINGLE_VERSION, State.AVAILABLE)]

    def _check(self, name: str, version: int | None, label: str | None) -> None:
        check_name(name)
        if name not in self.entries():
            raise ModelNotFound(name, version)
        if label is not None:
            raise UnknownLabel(name, label)
        if version is not None and version != SINGLE_VERSION:
            raise ModelNotFound(name, version, whole_model=False)


def check_name(name: str) -> None:
    """Raise InvalidInput, naming the rule (see the module doc), for an unsafe model name."""
    if not 0 < len(name) <= MAX_NAME_LENGTH:
        broken = f"must be 1 to {MAX_NAME_LENGTH} characters long"
    elif not name.isprintable():
        broken = "may not contain control, format or line-break characters"
    elif name == "." or any(part in name for part in _FORBIDDEN_IN_NAMES):
        broken = "may not contain '/', '\\' or '..', nor be '.'"
    else:
        return
    raise InvalidInput(
        f"model name {_excerpt(name)} {broken}: a model name is 1 to {MAX_NAME_LENGTH} "
        "printable characters without '/', '\\' or '..'"
    )


def _excerpt(name: str) -> str:
    return repr(name) if len(name) <= 64 else f"{name[:60]!r}... ({len(name)} characters)"


def _mib(size: int) -> str:
    return f"{size / MIB:.1f}"
