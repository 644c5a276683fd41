"""Model files read beneath a root: links followed only while they stay inside, ``..`` and
absolute paths refused when they leave, nothing outside ever opened or listed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from smserve.algorithms import confinement
from smserve.algorithms.confinement import (
    Outside,
    confined,
    file_size,
    is_directory,
    read_bytes,
    regular_files,
    resolve_directory,
)
from tests.containment import ListingProbe, OpenProbe


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    (root / "a").mkdir(parents=True)
    (root / "a" / "model").write_bytes(b"inside")
    return root


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[OpenProbe]:
    outside = tmp_path / "outside"
    outside.mkdir()
    probe = OpenProbe(outside / "secret")
    yield probe
    probe.release()


@pytest.fixture
def listing() -> Iterator[type[ListingProbe]]:
    yield ListingProbe.start()
    ListingProbe.stop()


def test_files_inside_are_read(root: Path) -> None:
    with confined(root):
        assert read_bytes(Path("a/model")) == b"inside"
        assert read_bytes(root / "a" / "model") == b"inside"
        assert file_size(Path("a/./model")) == 6
        assert regular_files(Path("a")) == [Path("a/model")]


@pytest.mark.parametrize("absolute", [False, True])
def test_links_that_stay_inside_are_followed(root: Path, absolute: bool) -> None:
    (root / "b").mkdir()
    target = root / "a" / "model" if absolute else Path("../a/model")
    (root / "b" / "model").symlink_to(target)
    (root / "c").symlink_to(root / "a" if absolute else Path("a"))
    with confined(root):
        assert read_bytes(Path("b/model")) == b"inside"
        assert read_bytes(Path("c/model")) == b"inside"
        assert regular_files(Path("b")) == [Path("b/model")]
        assert resolve_directory(Path("c")) == root.resolve() / "a"


@pytest.mark.parametrize("absolute", [False, True])
def test_a_link_to_a_file_outside_is_refused_unopened(
    root: Path, probe: OpenProbe, absolute: bool
) -> None:
    target = probe.path if absolute else Path("../../outside/secret")
    (root / "a" / "xgboost-model").symlink_to(target)
    with confined(root):
        with pytest.raises(Outside, match=r"a/xgboost-model is a symbolic link to .*outside"):
            read_bytes(Path("a/xgboost-model"))
        with pytest.raises(Outside, match="outside"):
            regular_files(Path("a"))
        with pytest.raises(Outside):
            file_size(Path("a/xgboost-model"))
    assert not probe.was_opened()


def test_a_link_to_a_folder_outside_is_refused_unlisted(
    root: Path, probe: OpenProbe, listing: type[ListingProbe]
) -> None:
    (root / "elsewhere").symlink_to(probe.path.parent)
    with confined(root):
        with pytest.raises(Outside):
            regular_files(Path("elsewhere"))
        with pytest.raises(Outside):
            read_bytes(Path("elsewhere/secret"))
        with pytest.raises(Outside):
            is_directory(Path("elsewhere"))
    assert listing.listed_outside(root) == []
    assert not probe.was_opened()


@pytest.mark.parametrize(
    "path", ["../outside/secret", "a/../../outside/secret", "a/../..", "/etc/passwd"]
)
def test_paths_that_leave_are_refused(root: Path, probe: OpenProbe, path: str) -> None:
    with confined(root), pytest.raises(Outside):
        read_bytes(Path(path))
    assert not probe.was_opened()


def test_an_absolute_path_under_the_root_is_inside(root: Path, probe: OpenProbe) -> None:
    with confined(root):
        assert read_bytes(root / "a" / ".." / "a" / "model") == b"inside"
        with pytest.raises(Outside):
            read_bytes(root / ".." / "outside" / "secret")
    assert not probe.was_opened()


def test_a_link_chain_that_leaves_midway_is_refused(root: Path, probe: OpenProbe) -> None:
    (root / "hop").symlink_to("a/../..")  # inside as written, outside once walked
    with confined(root), pytest.raises(Outside):
        read_bytes(Path("hop/outside/secret"))
    assert not probe.was_opened()


def test_link_loops_end(root: Path) -> None:
    (root / "loop").symlink_to("loop")
    with confined(root), pytest.raises(OSError, match="too many levels"):
        read_bytes(Path("loop"))


def test_only_regular_files_are_opened(root: Path) -> None:
    os.mkfifo(root / "a" / "pipe")
    with confined(root):
        with pytest.raises(OSError, match="not a regular file"):
            read_bytes(Path("a/pipe"))  # would block forever if opened for reading
        assert regular_files(Path("a")) == [Path("a/model")]
        with pytest.raises(IsADirectoryError):
            read_bytes(Path("a"))


def test_a_link_swapped_in_after_the_check_is_not_followed(
    root: Path, probe: OpenProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_lstat = os.lstat

    def lstat_then_swap(path: str, *, dir_fd: int | None = None) -> os.stat_result:
        found = real_lstat(path, dir_fd=dir_fd)
        if path == "model":  # the leaf passed the check: now an attacker swaps it
            os.unlink(root / "a" / "model")
            os.symlink(probe.path, root / "a" / "model")
        return found

    monkeypatch.setattr(confinement.os, "lstat", lstat_then_swap)
    with confined(root), pytest.raises(OSError, match="[Tt]oo many levels of symbolic links"):
        read_bytes(Path("a/model"))
    assert not probe.was_opened()


def test_unconfined_loads_follow_links_anywhere(root: Path, tmp_path: Path) -> None:
    # SM_MODEL_DIR and TF Serving layouts: the operator chose the directory.
    elsewhere = tmp_path / "shared-model"
    elsewhere.write_bytes(b"shared")
    (root / "a" / "linked").symlink_to(elsewhere)
    with confined(None):
        assert read_bytes(root / "a" / "linked") == b"shared"
    with confined(root), pytest.raises(Outside):
        read_bytes(root / "a" / "linked")


def test_confinement_ends_with_its_context(root: Path) -> None:
    assert confinement.current_root() is None
    with confined(root):
        assert confinement.current_root() == root
        with confined(root / "a"):
            assert confinement.current_root() == root / "a"
        assert confinement.current_root() == root
    assert confinement.current_root() is None
