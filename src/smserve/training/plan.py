"""What an algorithm's trainer offers the ``train`` orchestration, and each host's share of the
rows.

A trainer first *prepares* (reads the hyperparameters and this host's data, checking both) and
the prepared job then *runs* in a group of hosts (:mod:`smserve.training.collective`), writing
the model only where it is given a model folder (the master, or the only host).

Rows per host: a channel that SageMaker shards (``S3DistributionType: ShardedByS3Key``) is this
host's own, used whole. A channel every host receives whole (``FullyReplicated``, SageMaker's
default, also when ``inputdataconfig.json`` says nothing) is split by host index: of its n rows
(in read order) host i of N takes rows ``[i*n//N, (i+1)*n//N)``, so the hosts together train on
every row once. (The built-in XGBoost trains every host on the whole replicated channel.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from smserve.training.channels import Channel
from smserve.training.collective import Group
from smserve.training.hyperparameters import Hyperparameters

logger = logging.getLogger(__name__)

SHARDED = "ShardedByS3Key"
REPLICATED = "FullyReplicated"


@dataclass(frozen=True, slots=True)
class Share:
    """This host's part of each channel: host ``index`` of ``count``."""

    index: int = 0
    count: int = 1
    sharded: frozenset[str] = field(default_factory=frozenset)

    def may_lack(self, channel: str) -> bool:
        """Whether this host may hold no rows of ``channel``: a validation shard across hosts
        (the train channel's absence is handled before: the host leaves the job)."""
        return self.count > 1 and channel != "train"

    def rows(self, channel: str, n_rows: int) -> slice:
        """The rows of ``channel`` (of ``n_rows`` in read order) that this host trains on."""
        if self.count == 1 or channel in self.sharded:
            return slice(0, n_rows)
        part = slice(self.index * n_rows // self.count, (self.index + 1) * n_rows // self.count)
        logger.info(
            "channel %r is replicated on every host: host %d of %d is training on %d of %d rows",
            channel,
            self.index + 1,
            self.count,
            part.stop - part.start,
            n_rows,
        )
        return part


WHOLE = Share()


def read_sharded(input_data_config: Path) -> frozenset[str]:
    """The channels whose ``S3DistributionType`` is ``ShardedByS3Key``."""
    try:
        raw = json.loads(input_data_config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return frozenset()  # missing: replicated; unreadable: load_channels says why
    if not isinstance(raw, dict):
        return frozenset()
    return frozenset(
        name
        for name, entry in raw.items()
        if isinstance(entry, dict) and entry.get("S3DistributionType") == SHARDED
    )


def has_data(folder: Path) -> bool:
    """Whether ``folder`` holds a non-empty data file (what a host without a shard lacks)."""
    if not folder.is_dir():
        return False
    return any(
        path.is_file() and path.stat().st_size > 0 and not _hidden(path, folder)
        for path in folder.rglob("*")
    )


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


class Prepared(Protocol):
    """A trainer's job with its data read: ``train_rows`` of them on this host."""

    @property
    def train_rows(self) -> int: ...

    def run(self, group: Group, model_dir: Path | None) -> None: ...


class Trainer(Protocol):
    """One algorithm's training."""

    name: str
    default_content_type: str

    def prepare(
        self, hp: Hyperparameters, channels: Mapping[str, Channel], share: Share
    ) -> Prepared: ...
