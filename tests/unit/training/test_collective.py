"""The hosts' group: a real group of one (XGBoost's own tracker and communicator) on a
loopback address."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from smserve.training.collective import Meeting, joined
from tests.training_hosts.hosts import free_port

ADDRESS = "127.0.0.10"


def test_operations_outside_the_joining_thread_are_refused() -> None:
    """XGBoost's communicator belongs to the thread that joined; in another thread its
    allreduce would sum this host's values alone, a wrong answer with no error."""
    values = np.arange(6, dtype=np.float64).reshape(2, 3)
    with joined(Meeting(ADDRESS, ADDRESS, free_port(ADDRESS), 0, 1, 30)) as group:
        np.testing.assert_array_equal(group.allreduce_sum(values), values)
        np.testing.assert_array_equal(group.broadcast(values), values)
        with ThreadPoolExecutor(1) as other:
            for operation in (group.allreduce_sum, group.broadcast):
                with pytest.raises(RuntimeError, match="outside the thread that joined"):
                    other.submit(operation, values).result()
