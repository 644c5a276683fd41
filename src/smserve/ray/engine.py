"""``smserve score --engine ray``: the same files, the same answers as the local engine, read
and scored on a Ray cluster (``--address``; default: a local one).

* CSV (``--content-type text/csv``, no join, ``--on-error fail``): ``ray.data.read_csv``
  (no header; empty lines kept, so they fail as they do locally), scored in ``workers`` actors
  by ``CsvBatches``, which encode with the endpoint's batch-mode encoder. Should Arrow reject
  a file (a bad cell, a ragged or empty line), the files not yet written are scored again the
  second way, so every failure is reported exactly as the local engine reports it.
* Everything else (JSON, JSON Lines, libsvm, RecordIO, joins, ``--on-error skip``):
  ``ray.data.read_binary_files``; each file is split and scored in one actor by the local
  engine's Scorer. An actor holds one whole file, so memory per actor is one file's size.

Answers come back in input order (``preserve_order``) and are written by the driver, each file
atomically, as the local engine writes them."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from smserve.config import Settings
from smserve.errors import ConfigError
from smserve.media import CSV, canonical
from smserve.scoring.engine import Summary
from smserve.scoring.inputs import InputFile
from smserve.scoring.options import Plan, Run
from smserve.scoring.output import Sink, open_sink
from smserve.scoring.progress import Progress
from smserve.scoring.scorer import Scorer, build_service
from smserve.scoring.split import chunks
from smserve.service import InferenceService
from smserve.types import Batch

logger = logging.getLogger(__name__)

# Ray CPUs reserved per scoring actor. With a whole CPU each, ``workers`` actors on a cluster of
# ``workers`` CPUs leave none for the read tasks feeding them, and the job waits forever.
ACTOR_CPUS = 0.5
BATCH_ROWS = 16_384  # rows per actor call on the CSV path: ~3 MiB of float32 at 50 columns


def score_files_on_ray(
    files: Sequence[InputFile],
    settings: Settings,
    plan: Plan,
    run: Run,
    progress: Progress,
    address: str | None = None,
) -> Summary:
    """Score ``files`` on Ray; connects to ``address`` unless Ray is already initialised."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, configure_logging=False)
    todo = _todo(files, run)
    collector = _Collector(todo, progress, Summary(existing=len(files) - len(todo)))
    if _reads_csv(plan):
        try:
            collector.collect(_csv_rows(todo, settings, plan, run))
        except Exception as exc:  # Arrow or the model rejected a file: see the module doc
            logger.warning("Arrow could not read every file (%s); scoring file by file", exc)
            collector.abandon()
    collector.collect(_file_rows(collector.left(), settings, plan, run))
    return collector.summary


def _todo(files: Sequence[InputFile], run: Run) -> list[InputFile]:
    if any(item.path is None for item in files):
        raise ConfigError("--engine ray reads files or folders, not - (standard input)")
    return [f for f in files if not (run.skip_existing and f.output and f.output.exists())]


def _reads_csv(plan: Plan) -> bool:
    essence = canonical((plan.content_type or "").partition(";")[0])
    return essence == CSV and plan.join_source == "None" and plan.on_error == "fail"


def _key(item: InputFile) -> str:
    assert item.path is not None
    return str(item.path.resolve())


def _csv_rows(
    files: Sequence[InputFile], settings: Settings, plan: Plan, run: Run
) -> Iterator[Mapping[str, Any]]:
    if not files:
        return iter(())
    import pyarrow.csv as arrow_csv  # type: ignore[import-untyped]
    import ray.data

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    dataset = ray.data.read_csv(
        [_key(item) for item in files],
        include_paths=True,
        read_options=arrow_csv.ReadOptions(autogenerate_column_names=True),
        parse_options=arrow_csv.ParseOptions(ignore_empty_lines=False),
    )
    scored = dataset.map_batches(
        CsvBatches,
        fn_constructor_kwargs={"settings": settings, "plan": plan},
        batch_format="numpy",
        batch_size=BATCH_ROWS,
        compute=ray.data.ActorPoolStrategy(size=run.workers),
        num_cpus=ACTOR_CPUS,
    )
    return iter(scored.iter_rows())


def _file_rows(
    files: Sequence[InputFile], settings: Settings, plan: Plan, run: Run
) -> Iterator[Mapping[str, Any]]:
    if not files:
        return iter(())
    import ray.data

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    dataset = ray.data.read_binary_files([_key(item) for item in files], include_paths=True)
    scored = dataset.map(
        WholeFiles,  # type: ignore[arg-type]
        fn_constructor_kwargs={"settings": settings, "plan": plan, "run": run},
        compute=ray.data.ActorPoolStrategy(size=min(run.workers, len(files))),
        num_cpus=ACTOR_CPUS,
    )
    return iter(scored.iter_rows())


class CsvBatches:
    """An actor: Arrow-parsed CSV rows in, the endpoint's batch-mode answer bytes out, one
    output row per run of rows from the same file."""

    def __init__(self, settings: Settings, plan: Plan) -> None:
        self.service: InferenceService = build_service(settings)
        registry = self.service.registry
        self.encoder = registry.encoder_for(plan.accept, self.service.default_accept)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list[Any]]:
        paths = batch.pop("path")
        features = np.column_stack([np.asarray(v, dtype=np.float32) for v in batch.values()])
        out: dict[str, list[Any]] = {"path": [], "body": [], "records": [], "failure": []}
        for path, start, stop in _runs(paths):
            prediction = self.service.predict(Batch(np.ascontiguousarray(features[start:stop])))
            _append(out, path, self.encoder.encode(prediction), stop - start, "")
        return out


class WholeFiles:
    """An actor: one whole file in, its complete answer (or its failure) out."""

    def __init__(self, settings: Settings, plan: Plan, run: Run) -> None:
        self.scorer = Scorer(build_service(settings), plan)
        self.plan, self.run = plan, run

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"path": row["path"], "records": 0, "skipped": 0, "failure": ""}
        single = self.run.batch_strategy == "SingleRecord"
        body: list[bytes] = []
        try:
            stream = io.BytesIO(row["bytes"])
            for chunk in chunks(stream, self.plan.split_type, self.run.max_payload_bytes, single):
                scored = self.scorer.score(chunk)
                if scored.failed:
                    error = scored.errors[0]
                    return answer | {"failure": f"record {error.record}: {error.message}"}
                body.append(scored.body)
                answer["records"] += scored.n_records
                answer["skipped"] += len(scored.errors)
        except Exception as exc:  # the file fails, as in the local engine; the run goes on
            return answer | {"failure": getattr(exc, "message", str(exc))}
        return answer | {"body": b"".join(body)}


def _runs(paths: np.ndarray) -> Iterator[tuple[str, int, int]]:
    """``(path, start, stop)`` for each run of equal consecutive paths."""
    edges = np.flatnonzero(paths[1:] != paths[:-1]) + 1
    bounds = [0, *edges.tolist(), len(paths)]
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        yield str(paths[start]), start, stop


def _append(out: dict[str, list[Any]], path: str, body: bytes, records: int, failure: str) -> None:
    for key, value in (("path", path), ("body", body), ("records", records), ("failure", failure)):
        out[key].append(value)


class _Collector:
    """Writes answer rows to their files in order; a file is committed when the next file's
    rows begin (rows arrive in input order) or at the end."""

    def __init__(self, files: Sequence[InputFile], progress: Progress, summary: Summary) -> None:
        self.files = {_key(item): item for item in files}
        self.progress, self.summary = progress, summary
        self.done: set[str] = set()
        self.current: tuple[str, Sink] | None = None

    def left(self) -> list[InputFile]:
        return [item for key, item in self.files.items() if key not in self.done]

    def collect(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self._take(row)
        self._finish()

    def abandon(self) -> None:
        if self.current is not None:
            self.current[1].discard()
            self.current = None

    def _take(self, row: Mapping[str, Any]) -> None:
        key = str(row["path"])
        if row["failure"]:
            self._fail(key, str(row["failure"]))
            return
        self._sink(key).write(bytes(row["body"]))
        self.summary.skipped_records += int(row.get("skipped", 0))
        self.progress.advance(int(row["records"]), 0)

    def _sink(self, key: str) -> Sink:
        if self.current is None or self.current[0] != key:
            if key in self.done:
                raise RuntimeError(f"answers for {key} arrived out of order")
            self._finish()
            self.current = (key, open_sink(self.files[key].output))
        return self.current[1]

    def _finish(self) -> None:
        if self.current is not None:
            key, sink = self.current
            sink.commit()
            self.done.add(key)
            self.summary.scored += 1
            self.current = None

    def _fail(self, key: str, failure: str) -> None:
        if self.current is not None and self.current[0] == key:
            self.abandon()
        self.done.add(key)
        self.summary.failed += 1
        logger.error("%s: failed, no output written: %s", self.files[key].relative, failure)
