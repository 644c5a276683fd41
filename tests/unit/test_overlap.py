"""Predicting and writing in overlapping row chunks (``overlap``): the same bytes and the same
errors as one prediction written at once, with real models and codecs; and the service asks
for it only for wide answers in formats whose chunks join."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from smserve.algorithms.loading import load_algorithm
from smserve.codecs import default_registry
from smserve.codecs.base import Encoder
from smserve.codecs.csv import CsvCodec
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.config import Settings
from smserve.errors import InvalidInput, PredictionError
from smserve.overlap import CHUNKS, MIN_ROWS, Overlap, row_chunks
from smserve.service import InferenceService
from smserve.types import Batch, Prediction

ROWS = MIN_ROWS + 1003  # chunks one row apart in size


def service_for(model_dir: Path, overlap: Overlap | None = None) -> InferenceService:
    settings = Settings(model_dir=model_dir, workers=1)
    algorithm = load_algorithm(settings)
    return InferenceService(algorithm, default_registry(settings), settings, overlap or Overlap())


def features(n_columns: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.normal(scale=8, size=(ROWS, n_columns)).astype(np.float32)
    rows[rng.random(rows.shape) < 0.05] = 0.0
    return rows


@pytest.mark.parametrize("encoder", [CsvCodec(), JsonLinesCodec()], ids=["csv", "jsonlines"])
@pytest.mark.parametrize(
    "outputs", [("approximate_contributions",), ("score", "contributions")], ids=["approx", "exact"]
)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_xgboost_answers_are_the_bytes_of_one_prediction(
    xgb_multiclass_dir: Path, encoder: Encoder, outputs: tuple[str, ...], sparse: bool
) -> None:
    service = service_for(xgb_multiclass_dir)
    rows = features(4)
    rows[::7, 1] = np.nan
    batch = Batch(sp.csr_matrix(rows) if sparse else rows)
    whole = encoder.encode(service.predict(batch, outputs))
    assert service.answer(batch, outputs, encoder) == whole


@pytest.mark.parametrize("encoder", [CsvCodec(), JsonLinesCodec()], ids=["csv", "jsonlines"])
def test_kmeans_answers_are_the_bytes_of_one_prediction(
    kmeans_model_dir: Path, encoder: Encoder
) -> None:
    service = service_for(kmeans_model_dir)
    batch = Batch(features(4))
    outputs = ("closest_cluster", "contributions")
    assert service.answer(batch, outputs, encoder) == encoder.encode(
        service.predict(batch, outputs)
    )


def test_an_error_in_a_later_chunk_names_its_place_in_the_whole_body(
    kmeans_model_dir: Path,
) -> None:
    service = service_for(kmeans_model_dir)
    rows = features(4)
    rows[ROWS - 2, 3] = np.nan  # in the last chunk
    batch = Batch(rows)
    with pytest.raises(InvalidInput) as whole:
        service.predict(batch, ("contributions",))
    with pytest.raises(InvalidInput) as chunked:
        service.answer(batch, ("contributions",), CsvCodec())
    assert f"row {ROWS - 1}, column 4" in str(chunked.value)
    assert str(chunked.value) == str(whole.value)


def test_row_chunks_are_equal_consecutive_slices() -> None:
    rows = np.arange(ROWS * 2, dtype=np.float32).reshape(ROWS, 2)
    chunks = row_chunks(Batch(rows), CHUNKS)
    sizes = [chunk.n_rows for chunk in chunks]
    assert len(chunks) == CHUNKS
    assert max(sizes) - min(sizes) <= 1
    assert np.array_equal(np.concatenate([chunk.features for chunk in chunks]), rows)


class Recorder:
    """A predict function that records each call (rows, spare_cpu, thread), takes ``pause_s``
    and fails on the chunk that starts at row ``fail_at`` (features hold row numbers)."""

    def __init__(self, fail_at: int | None = None, pause_s: float = 0.0) -> None:
        self.calls: list[tuple[int, bool, str]] = []
        self.fail_at, self.pause_s = fail_at, pause_s
        self.running = 0
        self.lock = threading.Lock()

    def __call__(self, batch: Batch, spare_cpu: bool) -> Prediction:
        with self.lock:
            self.calls.append((batch.n_rows, spare_cpu, threading.current_thread().name))
            self.running += 1
        try:
            time.sleep(self.pause_s)
            if batch.features[0, 0] == self.fail_at:
                raise PredictionError("the model failed on this chunk")
            return Prediction({"c": np.asarray(batch.features[:, 1:])}, columns=("c",))
        finally:
            with self.lock:
                self.running -= 1


def numbered(n_rows: int) -> Batch:
    """Rows ``[i, 1, 1]``: the first value names the row."""
    rows = np.ones((n_rows, 3), dtype=np.float32)
    rows[:, 0] = np.arange(n_rows)
    return Batch(rows)


def test_the_first_chunk_is_predicted_by_the_caller_the_rest_by_one_helper() -> None:
    recorder, caller = Recorder(), threading.current_thread().name
    assert Overlap().answer(numbered(ROWS), recorder, CsvCodec().encode) == b"1.0,1.0\n" * ROWS
    sizes = [size for size, _, _ in recorder.calls]
    assert sorted(sizes) == sorted(chunk.n_rows for chunk in row_chunks(numbered(ROWS), CHUNKS))
    threads = [thread for _, _, thread in recorder.calls]
    assert threads.count(caller) == 1
    assert len(set(threads) - {caller}) == 1  # one helper thread for the other chunks
    assert all(spare for _, spare, _ in recorder.calls)  # two threads busy: each spares a CPU


def test_a_failing_chunk_raises_and_leaves_nothing_running() -> None:
    overlap, interval = Overlap(), sys.getswitchinterval()
    chunks = row_chunks(numbered(ROWS), CHUNKS)
    for failing_chunk in (0, 1, CHUNKS - 1):  # the caller's, the helper's first, the last
        failing = Recorder(fail_at=int(chunks[failing_chunk].features[0, 0]), pause_s=0.005)
        with pytest.raises(PredictionError):
            overlap.answer(numbered(ROWS), failing, CsvCodec().encode)
        assert failing.running == 0  # waited for what had started
        assert sys.getswitchinterval() == interval  # lowered only while the overlap ran
    early = Recorder(fail_at=int(chunks[1].features[0, 0]), pause_s=0.005)
    with pytest.raises(PredictionError):
        overlap.answer(numbered(ROWS), early, CsvCodec().encode)
    assert len(early.calls) < CHUNKS  # the chunks not started were dropped
    working = Recorder()
    assert overlap.answer(numbered(ROWS), working, CsvCodec().encode) == b"1.0,1.0\n" * ROWS
    assert len(working.calls) == CHUNKS


def test_small_batches_and_a_busy_helper_predict_once_with_every_cpu() -> None:
    overlap = Overlap()
    small = Recorder()
    overlap.answer(numbered(MIN_ROWS - 1), small, CsvCodec().encode)
    assert [(size, spare) for size, spare, _ in small.calls] == [(MIN_ROWS - 1, False)]
    busy = Recorder()
    with overlap._busy:  # another request's overlap in progress
        overlap.answer(numbered(ROWS), busy, CsvCodec().encode)
    assert [(size, spare) for size, spare, _ in busy.calls] == [(ROWS, False)]


class CountingOverlap(Overlap):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def answer(self, *args: object, **kwargs: object) -> bytes:
        self.calls += 1
        return super().answer(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outputs", "encoder", "overlaps"),
    [
        (("approximate_contributions",), CsvCodec(), True),
        (("score", "contributions"), JsonLinesCodec(), True),
        (("approximate_contributions",), JsonCodec(), False),  # one document: no chunks
        (("score",), CsvCodec(), False),  # narrow: nothing to hide
        (None, CsvCodec(), False),  # the endpoint's default, score
    ],
)
def test_the_service_overlaps_wide_answers_in_chunked_formats(
    xgb_binary_dir: Path, outputs: tuple[str, ...] | None, encoder: Encoder, overlaps: bool
) -> None:
    overlap = CountingOverlap()
    service = service_for(xgb_binary_dir, overlap)
    service.answer(Batch(features(4)), outputs, encoder)
    assert overlap.calls == int(overlaps)
