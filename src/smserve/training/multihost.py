"""Training on more than one host, as the built-in algorithms do.

1. Every host waits (bounded) for the host names to resolve, then reads the hyperparameters and
   its own data, catching any error, before it meets the others.
2. All hosts meet (the master's tracker on ``SMSERVE_TRACKER_PORT``, default 9099) for one
   census: an allreduce in which each host reports ok, no training data, or its error message.
   If any host failed, every host stops: the failed one with its own reason, the others with
   ``stopped because host H failed: <reason>``; all exit non-zero.
3. When every host has training data, they train together in the census's group, without
   meeting again; the master alone writes the model. Otherwise a host without training data
   leaves (exit 0), as the built-in's does, and the hosts with data meet again (the first of
   them, in sorted order, runs the tracker, on port + 1) and train together; that group's
   master alone writes the model. A group of one trains alone.

Before step 2 each host writes a provisional ``output/failure`` naming itself, so even a host
that XGBoost's collective ends abruptly (it exits the process when its tracker reports a peer's
error) leaves a reason behind; success removes it. Every failure file starts ``host <name>:``.
Any wait is bounded by ``SMSERVE_COLLECTIVE_TIMEOUT_S`` (see ``smserve.training.collective``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from smserve.algorithms.xgboost.lean_import import import_lean
from smserve.config import TrainingSettings
from smserve.training.cluster import Cluster, resolve_all
from smserve.training.collective import LOCAL, Group, Meeting, collective_reason, joined
from smserve.training.failure import HostsFailed, TrainingError, clear_failure, write_failure
from smserve.training.paths import TrainingPaths
from smserve.training.plan import Prepared

logger = logging.getLogger(__name__)

OK, NO_DATA, FAILED = 0, 1, 2
MESSAGE_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Report:
    """What one host tells the others at the census."""

    status: int
    message: str = ""


def train_across_hosts(
    cluster: Cluster,
    settings: TrainingSettings,
    paths: TrainingPaths,
    prepare: Callable[[], Prepared | None],
) -> None:
    """Steps 1-3 above; ``prepare`` returns None when this host holds no training rows."""
    logger.info(
        "host %s is %d of %d hosts (%s); master %s",
        cluster.current,
        cluster.index + 1,
        cluster.size,
        ", ".join(cluster.hosts),
        cluster.master,
    )
    addresses = _labelled(cluster, lambda: resolve_all(cluster.hosts, _resolve_timeout(settings)))
    write_failure(paths.failure_file, _provisional(cluster))
    job, error = _prepare_locally(prepare)
    reports = _first_meeting(cluster, settings, addresses, _report(job, error), paths, job)
    _stop_if_any_failed(cluster, reports, error)
    if job is None:
        logger.info("no training data on host %s: leaving the job", cluster.current)
    elif not _all_have_data(reports):
        _train(cluster.among(_with_data(cluster, reports)), settings, paths, addresses, job)
    clear_failure(paths.failure_file)


def _resolve_timeout(settings: TrainingSettings) -> float:
    return settings.hosts.resolve_timeout_s


def _provisional(cluster: Cluster) -> str:
    return (
        f"host {cluster.current}: the job stopped while training across hosts "
        f"{', '.join(cluster.hosts)} (this host was stopped, or XGBoost's collective ended it "
        "after another host's failure); see the job's logs"
    )


def _labelled(cluster: Cluster, step: Callable[[], dict[str, str]]) -> dict[str, str]:
    try:
        return step()
    except TrainingError as exc:
        raise TrainingError(f"host {cluster.current}: {exc}") from exc


def _prepare_locally(
    prepare: Callable[[], Prepared | None],
) -> tuple[Prepared | None, BaseException | None]:
    try:
        return prepare(), None
    except Exception as exc:  # reported to every host at the census, then raised here
        if not isinstance(exc, TrainingError):
            logger.exception("preparing the training failed unexpectedly")
        return None, exc


def _report(job: Prepared | None, error: BaseException | None) -> Report:
    if error is not None:
        return Report(FAILED, str(error) or type(error).__name__)
    return Report(OK if job is not None and job.train_rows else NO_DATA)


def _first_meeting(
    cluster: Cluster,
    settings: TrainingSettings,
    addresses: dict[str, str],
    own: Report,
    paths: TrainingPaths,
    job: Prepared | None,
) -> list[Report]:
    """Every host's report; when every host has training data, the training too, in the
    same group (step 3)."""
    meeting = _meeting(cluster, settings, addresses, settings.hosts.tracker_port)
    with _across(cluster) as _, joined(meeting) as group:
        reports = census(group, own)
        if job is not None and _all_have_data(reports):
            _train_in(group, cluster, paths, job)
        return reports


def _all_have_data(reports: list[Report]) -> bool:
    return all(report.status == OK for report in reports)


def census(group: Group, own: Report) -> list[Report]:
    """Every host's report, in rank order (one allreduce of a table of rows)."""
    table = np.zeros((group.size, 1 + MESSAGE_BYTES), dtype=np.float64)
    table[group.rank] = _encoded(own)
    return [_decoded(row) for row in group.allreduce_sum(table)]


def _encoded(report: Report) -> np.ndarray:
    raw = report.message.encode("utf-8")[:MESSAGE_BYTES]
    row = np.zeros(1 + MESSAGE_BYTES, dtype=np.float64)
    row[0] = report.status
    row[1 : 1 + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return row


def _decoded(row: np.ndarray) -> Report:
    raw = bytes(np.rint(row[1:]).astype(np.uint8)).rstrip(b"\0")
    return Report(int(round(row[0])), raw.decode("utf-8", errors="ignore"))


def _stop_if_any_failed(
    cluster: Cluster, reports: list[Report], error: BaseException | None
) -> None:
    if error is not None:
        if isinstance(error, TrainingError):
            raise TrainingError(f"host {cluster.current}: {error}") from error
        raise RuntimeError(f"host {cluster.current}: {error}") from error
    failed = [
        (host, r) for host, r in zip(cluster.hosts, reports, strict=True) if r.status == FAILED
    ]
    if failed:
        host, report = failed[0]
        raise HostsFailed(
            f"host {cluster.current}: stopped because host {host} failed: {report.message}"
        )


def _with_data(cluster: Cluster, reports: list[Report]) -> list[str]:
    return [host for host, r in zip(cluster.hosts, reports, strict=True) if r.status == OK]


def _train(
    group_hosts: Cluster,
    settings: TrainingSettings,
    paths: TrainingPaths,
    addresses: dict[str, str],
    job: Prepared,
) -> None:
    if group_hosts.size == 1:
        logger.info(
            "host %s is the only host with training data: training alone", group_hosts.current
        )
        job.run(LOCAL, paths.model_dir)
        return
    meeting = _meeting(group_hosts, settings, addresses, settings.hosts.tracker_port + 1)
    with _across(group_hosts) as _, joined(meeting) as group:
        _train_in(group, group_hosts, paths, job)


def _train_in(group: Group, hosts: Cluster, paths: TrainingPaths, job: Prepared) -> None:
    """Train in ``group`` (the hosts ``hosts``); only its master writes the model."""
    model_dir = paths.model_dir if hosts.index == 0 else None
    job.run(group, model_dir)
    where = f"written to {paths.model_dir}" if model_dir else f"written by {hosts.master}"
    logger.info("training across %d hosts complete; model %s", hosts.size, where)


def _meeting(
    cluster: Cluster, settings: TrainingSettings, addresses: dict[str, str], port: int
) -> Meeting:
    return Meeting(
        master_address=addresses[cluster.master],
        own_address=addresses[cluster.current],
        port=port,
        task_id=cluster.index,
        n_hosts=cluster.size,
        timeout_s=settings.hosts.collective_timeout_s,
    )


@contextmanager
def _across(cluster: Cluster) -> Iterator[None]:
    """XGBoost's collective errors as HostsFailed naming this host; others labelled too."""
    import_lean()  # XGBoost's first import in a k-means job: without its sklearn wrappers
    from xgboost.core import XGBoostError

    try:
        yield
    except HostsFailed as exc:
        raise HostsFailed(f"host {cluster.current}: {exc}") from exc
    except XGBoostError as exc:
        raise HostsFailed(
            f"host {cluster.current}: training across hosts stopped: {collective_reason(exc)}"
        ) from exc
    except TrainingError as exc:
        raise TrainingError(f"host {cluster.current}: {exc}") from exc
