"""The per-request memory budget: the limit a body's size sets, the setting that binds and the
413 that names it; and the settings it comes from."""

from __future__ import annotations

import pytest

from smserve.budget import FLOOR_BYTES, MemoryBudget
from smserve.config import MIB, Settings
from smserve.errors import PayloadTooLarge
from smserve.resources import Resources


def test_the_limit_is_the_ratio_times_the_body_between_the_floor_and_the_cap() -> None:
    budget = MemoryBudget(cap_bytes=512 * MIB, ratio=64)
    assert budget.for_body(10).limit == FLOOR_BYTES  # tiny bodies always get the floor
    assert budget.for_body(1 * MIB).limit == 64 * MIB
    assert budget.for_body(100 * MIB).limit == 512 * MIB


def test_a_cap_under_the_floor_wins() -> None:
    assert MemoryBudget(cap_bytes=4 * MIB, ratio=64).for_body(10).limit == 4 * MIB


@pytest.mark.parametrize(
    ("body", "setting"),
    [(1 * MIB, "SMSERVE_REQUEST_MEMORY_RATIO=64"), (100 * MIB, "SMSERVE_REQUEST_MEMORY_MB=512")],
)
def test_the_413_names_the_limit_and_the_setting_that_raises_it(body: int, setting: str) -> None:
    request = MemoryBudget(cap_bytes=512 * MIB, ratio=64).for_body(body)
    request.check(request.limit, "exactly the limit")  # not over
    with pytest.raises(PayloadTooLarge) as caught:
        request.check(request.limit + 1, "text/csv: 12 values")
    message = caught.value.message
    assert message.startswith(f"text/csv: 12 values needs {request.limit + 1} bytes of memory")
    assert f"over the {request.limit}-byte limit for this request ({setting})" in message
    assert message.endswith(f"raise {setting.partition('=')[0]}")
    assert caught.value.status == 413


def test_settings_read_the_ratio_and_the_cap() -> None:
    resources = Resources(2.0, 4096 * MIB, "test", "test")
    env = {"SMSERVE_REQUEST_MEMORY_RATIO": "128", "SMSERVE_REQUEST_MEMORY_MB": "300"}
    budget = MemoryBudget.of(Settings.from_env(env, resources))
    assert (budget.ratio, budget.cap_bytes) == (128, 300 * MIB)
    default = MemoryBudget.of(Settings.from_env({}, resources))
    assert default.ratio == 64
    assert default.cap_bytes == 2048 * MIB // 2  # half the memory, over two workers' threads
