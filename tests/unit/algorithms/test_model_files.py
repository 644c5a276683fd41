"""Model-directory handling: candidate files, safe archive unpacking, and algorithm detection."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.algorithms.loading import Algorithm, detect_algorithm, load_algorithm
from smserve.algorithms.model_files import candidate_files, opened_model_dir
from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.config import Settings
from smserve.errors import ModelLoadError


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_candidates_skip_dotfiles_and_directories(tmp_path: Path) -> None:
    for name in ("xgboost-model-1", "xgboost-model-0", ".DS_Store"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text("")
    assert [p.name for p in candidate_files(tmp_path)] == ["xgboost-model-0", "xgboost-model-1"]


def test_missing_directory_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_algorithm(Settings(model_dir=tmp_path / "absent"))


def test_empty_directory_names_the_expected_files(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="xgboost-model .*model_algo-1"):
        load_algorithm(Settings(model_dir=tmp_path))


@pytest.mark.parametrize(
    ("name", "algorithm"),
    [
        ("centroids.npy", "kmeans"),
        ("model.skops", "kmeans"),
        ("xgboost-model", "xgboost"),
        ("xgboost-model-0", "xgboost"),
        ("model.json", "xgboost"),
    ],
)
def test_detection_from_file_names(tmp_path: Path, name: str, algorithm: str) -> None:
    (tmp_path / name).write_bytes(b"x")
    assert detect_algorithm(tmp_path) == algorithm


def test_a_model_algo_1_is_detected_by_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "model_algo-1").write_bytes(b"\x12\x01\0\0\0\0\0\0" + b"\0" * 8 + b"\1" + b"\0" * 7)
    assert detect_algorithm(tmp_path) == "kmeans"  # an NDArray list of one array
    (tmp_path / "model_algo-1").write_bytes(b"x")  # nothing served here, not XGBoost either
    with pytest.raises(ModelLoadError, match="model_algo-1 is a 1-byte file of no format served"):
        detect_algorithm(tmp_path)


def test_loads_kmeans_from_archive(tmp_path: Path, kmeans_model_dir: Path) -> None:
    archive_dir = tmp_path / "packed"
    archive_dir.mkdir()
    with tarfile.open(archive_dir / "model.tar.gz", "w:gz") as tar:
        tar.add(kmeans_model_dir / "model_algo-1", arcname="model_algo-1")
    assert isinstance(load_algorithm(Settings(model_dir=archive_dir)), KMeans)


def test_loads_xgboost_from_archive_with_a_wrapper_directory(
    tmp_path: Path, xgb_binary_dir: Path
) -> None:
    archive_dir = tmp_path / "packed"
    archive_dir.mkdir()
    with tarfile.open(archive_dir / "model.tar.gz", "w:gz") as tar:
        tar.add(xgb_binary_dir, arcname="model")
    algorithm = load_algorithm(Settings(model_dir=archive_dir))
    assert isinstance(algorithm, XGBoost)
    assert algorithm.n_features == 4


def test_unpacked_archive_is_removed_after_loading(tmp_path: Path) -> None:
    make_tar(tmp_path / "model.tgz", [(entry("model_algo-1"), b"data")])
    with opened_model_dir(tmp_path) as unpacked:
        assert (unpacked / "model_algo-1").read_bytes() == b"data"
    assert not unpacked.exists()


def test_archive_next_to_unrelated_files_is_ambiguous(tmp_path: Path) -> None:
    make_tar(tmp_path / "model.tar.gz", [(entry("xgboost-model"), b"x")])
    (tmp_path / "xgboost-model-0").write_bytes(b"x")
    with pytest.raises(
        ModelLoadError, match="holds archives and other files .*no archive holds xgboost-model-0"
    ):
        load_algorithm(Settings(model_dir=tmp_path))


def test_broken_archive_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "model.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ModelLoadError, match="model.tar.gz: cannot unpack"):
        load_algorithm(Settings(model_dir=tmp_path))


@pytest.mark.parametrize(
    "member",
    [
        entry("../evil"),
        entry("model/../../evil"),
        entry("/tmp/evil"),
        entry("link", tarfile.SYMTYPE, "/etc/passwd"),
        entry("a/link", tarfile.SYMTYPE, "../../evil"),
        entry("hard", tarfile.LNKTYPE, "../evil"),
        entry("tty", tarfile.CHRTYPE),
        entry("disk", tarfile.BLKTYPE),
        entry("pipe", tarfile.FIFOTYPE),
    ],
    ids=lambda m: f"{m.name}->{m.linkname}" if m.linkname else m.name,
)
def test_malicious_archives_are_refused(tmp_path: Path, member: tarfile.TarInfo) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    make_tar(model_dir / "model.tar.gz", [(entry("model_algo-1"), b"x"), (member, b"evil")])
    with pytest.raises(ModelLoadError, match="refusing to unpack"):
        load_algorithm(Settings(model_dir=model_dir))
    assert not (tmp_path / "evil").exists()


def test_links_inside_the_archive_are_allowed(tmp_path: Path, kmeans_centroids: np.ndarray) -> None:
    np.save(tmp_path / "c.npy", kmeans_centroids)
    data = (tmp_path / "c.npy").read_bytes()
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    members = [
        (entry("store/c.bin"), data),
        (entry("centroids.npy", tarfile.SYMTYPE, "store/c.bin"), b""),
    ]
    make_tar(model_dir / "model.tar.gz", members)
    kmeans = load_algorithm(Settings(model_dir=model_dir))
    assert isinstance(kmeans, KMeans)


def test_errors_inside_an_archive_name_the_archive(tmp_path: Path) -> None:
    make_tar(tmp_path / "model.tar.gz", [(entry("notes.md"), b"# not a model")])
    with pytest.raises(ModelLoadError, match=r"notes.md is not an XGBoost model.*model.tar.gz\)"):
        load_algorithm(Settings(model_dir=tmp_path, xgboost_device="cpu"))


def test_loaded_models_satisfy_the_protocol(kmeans_model_dir: Path, xgb_binary_dir: Path) -> None:
    for model_dir in (kmeans_model_dir, xgb_binary_dir):
        algorithm = load_algorithm(Settings(model_dir=model_dir, xgboost_device="cpu"))
        assert isinstance(algorithm, Algorithm)


def test_forced_algorithm_wins_over_detection(kmeans_model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="model_algo-1 is not an XGBoost model"):
        load_algorithm(Settings(model_dir=kmeans_model_dir, algorithm="xgboost"))
