"""Predicting and writing a large answer at once: while the caller writes one chunk of rows, a
helper thread predicts the next ones.

Worth it only where writing costs about as much as predicting: a wide answer (explanations,
one value per feature per row) written as text. For the benchmark model (10,000 rows of 50
features) XGBoost's approximate contributions take about 15 ms on one thread and their CSV
about 14 ms. For a narrow answer the writing is nothing to hide and chunks only add calls
(4.7 -> 5.9 ms), so the service asks for an overlap only for wide answers
(``SelectableOutputs.wide_outputs``) in a format whose chunks join into the whole body
(``Encoder.chunked``).

The caller has nothing to write until a first chunk is predicted, so it predicts the first
chunk itself while the helper starts on the second, and the helper goes on through the rest
in order. Two threads of the request are then busy at once, so each prediction is asked to
spare a CPU (``predict(chunk, True)``): on a worker with two CPUs XGBoost then predicts on one
thread instead of both, which would take the writer's CPU (measured, BENCHMARKS.md: on this
2-vCPU machine two busy threads run at about 1.5 times one, so the work done matters more
than how it is spread).

Rows are predicted independently, so the answer is the same bytes either way (the tests
compare them). Chunks are equal slices of at least ``MIN_ROWS / CHUNKS`` rows, far above the
one-thread path of small XGBoost batches, and each keeps its place in the body for error
messages (``Batch.locate``).

The helper holds the GIL only between XGBoost's calls, but it must win it back from a caller
busy writing text: CPython hands it over only after the switch interval (5 ms by default), a
chunk's whole encode. An overlap lowers that interval to ``SWITCH_INTERVAL_S`` while it runs
(it is one setting for the process: other request threads of a gthread worker switch as often
meanwhile). One helper per process: a second request arriving while it is busy (gthread
workers) writes its answer after predicting it, as without an overlap, rather than queueing
behind the first.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from smserve.types import Batch, Locate, Prediction

MIN_ROWS = 4096  # smaller batches are written one after the other
CHUNKS = 8
SWITCH_INTERVAL_S = 0.0002

Predict = Callable[[Batch, bool], Prediction]  # (rows, spare_cpu): True while another runs
Encode = Callable[[Prediction], bytes]


class Overlap:
    """Writes ``encode(predict(batch))`` with the predictions of later chunks overlapping the
    writing of earlier ones."""

    def __init__(self) -> None:
        self._busy = threading.Lock()
        self._helper: ThreadPoolExecutor | None = None
        self._pid = 0

    def answer(self, batch: Batch, predict: Predict, encode: Encode) -> bytes:
        """The whole answer's body; raises what ``predict`` or ``encode`` raise."""
        if batch.n_rows < MIN_ROWS or not self._busy.acquire(blocking=False):
            return encode(predict(batch, False))
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, SWITCH_INTERVAL_S))
        try:
            return b"".join(self._overlapped(row_chunks(batch, CHUNKS), predict, encode))
        finally:
            sys.setswitchinterval(interval)
            self._busy.release()

    def _overlapped(self, chunks: list[Batch], predict: Predict, encode: Encode) -> list[bytes]:
        helper = self._started()
        later: list[Future[Prediction]] = [helper.submit(predict, c, True) for c in chunks[1:]]
        try:
            bodies = [encode(predict(chunks[0], True))]
            bodies += [encode(future.result()) for future in later]
        finally:  # after a failure too: nothing left running into the next request
            for future in later:
                future.cancel()
            wait(later)
        return bodies

    def _started(self) -> ThreadPoolExecutor:
        if self._helper is None or self._pid != os.getpid():  # threads do not survive fork
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="smserve-overlap")
            self._pid = os.getpid()
        return self._helper


def row_chunks(batch: Batch, count: int) -> list[Batch]:
    """``batch`` as ``count`` consecutive slices of equal size (within one row), each naming
    its values by their place in the whole body."""
    bounds = np.linspace(0, batch.n_rows, count + 1).astype(int).tolist()
    return [
        Batch(batch.features[start:stop], _shifted(batch.locate, start))
        for start, stop in zip(bounds, bounds[1:], strict=False)
    ]


def _shifted(locate: Locate, offset: int) -> Locate:
    def shifted(row: int, column: int) -> str:
        return locate(row + offset, column)

    return shifted


PROCESS_OVERLAP = Overlap()  # shared by every service of a process (one helper thread)
