"""What one ``smserve score`` run was asked to do: the Batch Transform data settings
(split, batch, assemble, join) and the run's own choices (workers, errors, resuming).

It holds values only; nothing here reads a file or loads a model."""

from __future__ import annotations

from dataclasses import dataclass

SPLIT_TYPES = ("Line", "RecordIO", "None")
BATCH_STRATEGIES = ("MultiRecord", "SingleRecord")
ASSEMBLE_WITH = ("Line", "None")
JOIN_SOURCES = ("None", "Input")
ON_ERROR = ("fail", "skip")
ENGINES = ("local", "ray", "spark")

EXIT_OK = 0  # every record of every file was scored
EXIT_FILE_FAILED = 1  # at least one file failed and has no output (the log names the record)
EXIT_RECORDS_SKIPPED = 3  # finished, but --on-error skip wrote error lines
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as a shell reports it


@dataclass(frozen=True, slots=True)
class Plan:
    """How each mini-batch is sent and how its answer is written; the same in every worker.

    ``content_type`` and ``accept`` are header values as a client would send them (None: the
    model's defaults, as on the endpoint).
    """

    content_type: str | None = None
    accept: str | None = None
    split_type: str = "Line"
    assemble_with: str = "Line"
    join_source: str = "None"
    on_error: str = "fail"


@dataclass(frozen=True, slots=True)
class Run:
    """How the inputs are cut into mini-batches and how the work is spread.

    ``max_payload_bytes`` bounds every mini-batch (Batch Transform's MaxPayloadInMB); a
    single record larger than it fails its file, as it fails a transform job.
    """

    max_payload_bytes: int = 6 * 1024 * 1024
    batch_strategy: str = "MultiRecord"
    workers: int = 1
    skip_existing: bool = False

    @property
    def in_flight(self) -> int:
        """Shards sent ahead of the one being written: two per worker keep every worker
        busy while the writer catches up, and bound memory and part files (see ``engine``)."""
        return 2 * self.workers
