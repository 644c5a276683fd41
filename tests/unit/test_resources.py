"""Container limits read from fake /proc and /sys trees (cgroup v2 and v1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smserve.config import Settings
from smserve.resources import MIB, Resources, detect

GIB = 1024 * MIB
HOST_CPUS = len(os.sched_getaffinity(0))


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _v2(root: Path, cpu_max: str, memory_max: str, group: str = "/") -> None:
    _write(root, "proc/self/cgroup", f"0::{group}\n")
    _write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    directory = "sys/fs/cgroup" + (group if group != "/" else "")
    _write(root, f"{directory}/cpu.max", cpu_max)
    _write(root, f"{directory}/memory.max", memory_max)


def _v1(root: Path, quota: str, period: str, limit: str, memory_group: str = "/") -> None:
    _write(root, "proc/self/cgroup", f"4:memory:{memory_group}\n1:cpu,cpuacct:/\n")
    _write(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", quota)
    _write(root, "sys/fs/cgroup/cpu/cpu.cfs_period_us", period)
    directory = "sys/fs/cgroup/memory" + (memory_group if memory_group != "/" else "")
    _write(root, f"{directory}/memory.limit_in_bytes", limit)


def test_v2_quota_and_memory_limit(tmp_path: Path) -> None:
    _v2(tmp_path, "100000 100000\n", f"{GIB}\n")
    found = detect(tmp_path)
    assert found.cpus == 1.0
    assert found.memory_bytes == GIB
    assert "cgroup v2" in found.cpu_source
    assert "cgroup v2" in found.memory_source


def test_v2_unlimited_falls_back_to_affinity_and_physical_memory(tmp_path: Path) -> None:
    _v2(tmp_path, "max 100000\n", "max\n")
    found = detect(tmp_path)
    assert found.cpus == HOST_CPUS
    assert found.cpu_source == "affinity mask"
    assert found.memory_source == "physical memory"


def test_v2_a_parent_limit_binds_the_child(tmp_path: Path) -> None:
    _v2(tmp_path, "max 100000\n", "max\n", group="/pod/app")
    _write(tmp_path, "sys/fs/cgroup/pod/memory.max", f"{512 * MIB}\n")
    _write(tmp_path, "sys/fs/cgroup/pod/cpu.max", "50000 100000\n")
    found = detect(tmp_path)
    assert (found.cpus, found.memory_bytes) == (0.5, 512 * MIB)
    assert found.cpu_count == 1  # sizing never goes below one CPU


def test_v1_quota_and_nested_memory_limit(tmp_path: Path) -> None:
    # as on this project's machines: the memory cgroup at a nested path, cpu at the root
    _v1(tmp_path, "150000\n", "100000\n", f"{768 * MIB}\n", memory_group="/process_api/abc")
    found = detect(tmp_path)
    assert found.cpus == min(1.5, HOST_CPUS)
    assert found.memory_bytes == 768 * MIB
    assert found.memory_source == "cgroup v1 memory limit"


def test_v1_no_limit_is_a_huge_number(tmp_path: Path) -> None:
    _v1(tmp_path, "-1\n", "100000\n", "9223372036854771712\n")
    found = detect(tmp_path)
    assert found.cpu_source == "affinity mask"
    assert found.memory_source == "physical memory"


def test_nothing_readable_means_the_host(tmp_path: Path) -> None:
    found = detect(tmp_path)
    assert found.cpus == HOST_CPUS
    assert found.memory_bytes > 0


def test_a_quota_above_the_affinity_mask_is_not_believed(tmp_path: Path) -> None:
    _v2(tmp_path, f"{(HOST_CPUS + 2) * 100000} 100000\n", "max\n")
    assert detect(tmp_path).cpus == HOST_CPUS


SERVERLESS = Resources(1.0, GIB, "cgroup v2 CPU quota", "cgroup v2 memory limit")
BIG = Resources(16.0, 64 * GIB, "cgroup v2 CPU quota", "cgroup v2 memory limit")


def test_defaults_follow_the_limits() -> None:
    small = Settings.from_env({}, SERVERLESS)
    assert (small.workers, small.cpu_count) == (1, 1)
    assert small.request_memory_bytes == GIB // 2
    assert small.memory_budget_bytes is not None
    assert 0 < small.memory_budget_bytes < GIB // 4
    big = Settings.from_env({}, BIG)
    assert big.workers == 16
    assert big.request_memory_bytes == 64 * GIB // 2 // 16
    assert big.memory_budget_bytes is not None
    assert big.memory_budget_bytes * 16 < 64 * GIB * 0.5  # every worker holds every model


def test_the_request_share_divides_among_threads() -> None:
    settings = Settings.from_env({"SMSERVE_THREADS": "4"}, BIG)
    assert settings.request_memory_bytes == 64 * GIB // 2 // (16 * 4)


def test_explicit_settings_win() -> None:
    settings = Settings.from_env(
        {
            "SAGEMAKER_MODEL_SERVER_WORKERS": "3",
            "SMSERVE_REQUEST_MEMORY_MB": "100",
            "SMSERVE_MEMORY_BUDGET_MB": "200",
        },
        SERVERLESS,
    )
    assert settings.workers == 3
    assert settings.request_memory_bytes == 100 * MIB
    assert settings.memory_budget_bytes == 200 * MIB


@pytest.mark.parametrize("name", ["SMSERVE_REQUEST_MEMORY_MB", "SMSERVE_MEMORY_BUDGET_MB"])
def test_budgets_must_be_positive(name: str) -> None:
    from smserve.errors import ConfigError

    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: "0"}, SERVERLESS)


def test_the_log_line_names_the_sources() -> None:
    assert Settings.from_env({}, SERVERLESS).resources_note == (
        "1 CPUs (cgroup v2 CPU quota), 1024 MiB of memory (cgroup v2 memory limit)"
    )
