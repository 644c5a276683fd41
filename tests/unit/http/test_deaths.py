"""A loading process's death in words: a crash with its signal, an out-of-memory kill when the
cgroup's oom_kill count rose, another SIGKILL when it did not, either when it is unknown."""

from __future__ import annotations

import signal
from pathlib import Path

from smserve.http.deaths import described, oom_kills


def _cgroup(root: Path, membership: str, files: dict[str, str]) -> Path:
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text(membership)
    for name, text in files.items():
        path = root / "sys/fs/cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_oom_kills_reads_cgroup_v2_memory_events(tmp_path: Path) -> None:
    events = "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n"
    root = _cgroup(tmp_path, "0::/pod/c1\n", {"pod/c1/memory.events": events})
    assert oom_kills(root) == 2


def test_oom_kills_reads_cgroup_v1_oom_control(tmp_path: Path) -> None:
    control = "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"
    membership = "4:memory:/docker/abc\n1:cpu:/\n"
    root = _cgroup(tmp_path, membership, {"memory/docker/abc/memory.oom_control": control})
    assert oom_kills(root) == 5


def test_oom_kills_is_none_when_the_cgroup_does_not_say(tmp_path: Path) -> None:
    assert oom_kills(_cgroup(tmp_path, "0::/\n", {})) is None


def test_a_crash_names_its_signal_and_not_memory() -> None:
    said = described(-signal.SIGSEGV, 0, 0)
    assert said.startswith("crashed with SIGSEGV (signal 11) while loading")
    assert "out-of-memory" not in said
    assert "SIGABRT (signal 6)" in described(-signal.SIGABRT, None, None)


def test_sigkill_is_an_oom_kill_only_when_the_count_rose() -> None:
    assert "out-of-memory killer (SIGKILL; the cgroup's oom_kill count rose from 1 to 2)" in (
        described(-signal.SIGKILL, 1, 2)
    )
    assert "by another process, not by the out-of-memory killer" in described(-9, 1, 1)
    assert "or by another process" in described(-9, None, None)
    assert described(5, None, None) == "failed (exit status 5)"
