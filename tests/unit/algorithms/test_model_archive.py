"""Model archives as SageMaker's tools leave them, and bounded unpacking."""

from __future__ import annotations

import io
import logging
import shutil
import tarfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.algorithms.loading import load_algorithm
from smserve.algorithms.model_files import opened_model_dir
from smserve.algorithms.xgboost.algorithm import XGBoost
from smserve.config import MIB, Settings
from smserve.errors import ModelLoadError


def pack(model_dir: Path, archive: Path) -> Path:
    """``archive`` holding the files of ``model_dir`` at its top level, as SageMaker writes."""
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(model_dir.iterdir()):
            tar.add(path, arcname=path.name)
    return archive


def local_mode_dir(model_dir: Path, where: Path) -> Path:
    """What the SDK's local mode mounts: model.tar.gz extracted next to itself."""
    where.mkdir()
    archive = pack(model_dir, where / "model.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return where


def header_only_archive(path: Path, sizes: dict[str, int]) -> Path:
    """A gzip tar whose headers declare ``sizes`` but which holds no data at all: reading
    past the first header fails, so a refusal shows the bounds came from the headers."""
    with path.open("wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, size in sizes.items():
            info = tarfile.TarInfo(name)
            info.size = size
            tar.fileobj.write(info.tobuf(tarfile.GNU_FORMAT))  # type: ignore[union-attr]
    return path


def scratch_entries(scratch: Path) -> list[str]:
    return sorted(p.name for p in scratch.iterdir())


@pytest.mark.parametrize("kind", ["xgboost", "kmeans"])
def test_sdk_local_mode_folder_serves_the_unpacked_files(
    tmp_path: Path,
    xgb_binary_dir: Path,
    kmeans_model_dir: Path,
    kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = xgb_binary_dir if kind == "xgboost" else kmeans_model_dir
    model_dir = local_mode_dir(source, tmp_path / "opt-ml-model")
    with caplog.at_level(logging.INFO, logger="smserve.algorithms.model_files"):
        algorithm = load_algorithm(Settings(model_dir=model_dir, xgboost_device="cpu"))
    assert isinstance(algorithm, XGBoost if kind == "xgboost" else KMeans)
    assert "ignoring model.tar.gz" in caplog.text
    assert "already holds the files they unpack to" in caplog.text


def test_local_mode_folder_is_served_in_place(tmp_path: Path, kmeans_model_dir: Path) -> None:
    model_dir = local_mode_dir(kmeans_model_dir, tmp_path / "model")
    with opened_model_dir(model_dir, scratch_parent=tmp_path) as files_dir:
        assert files_dir == model_dir


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("extra-file", "no archive holds notes.txt"),
        ("missing-file", "model.tar.gz holds xgboost-model-1, which is not in the folder"),
        ("different-size", "xgboost-model-1 is not the 2-byte file model.tar.gz holds"),
    ],
)
def test_archive_next_to_files_it_does_not_unpack_to_is_refused(
    tmp_path: Path, xgb_binary_dir: Path, change: str, reason: str
) -> None:
    (xgb_binary_dir / "xgboost-model-1").write_bytes(b"{}")
    model_dir = local_mode_dir(xgb_binary_dir, tmp_path / "model")
    if change == "extra-file":
        (model_dir / "notes.txt").write_text("hello")
    elif change == "missing-file":
        (model_dir / "xgboost-model-1").unlink()
    else:
        (model_dir / "xgboost-model-1").write_bytes(b"{ }")
    with pytest.raises(ModelLoadError, match=f"holds archives and other files .*{reason}"):
        load_algorithm(Settings(model_dir=model_dir))


def test_two_archives_are_refused(tmp_path: Path, kmeans_model_dir: Path) -> None:
    pack(kmeans_model_dir, tmp_path / "a.tar.gz")
    pack(kmeans_model_dir, tmp_path / "b.tar.gz")
    with pytest.raises(ModelLoadError, match="holds archives and other files .*no files beside"):
        load_algorithm(Settings(model_dir=tmp_path))


def training_job_output(model_dir: Path, where: Path) -> Path:
    """What a local ``Estimator.fit`` leaves, packed by the SDK's own function: model.tar.gz
    (``/opt/ml/model``) and output.tar.gz (``/opt/ml/output``: ``data/`` with a file)."""
    with quiet_sdk():
        from sagemaker.utils import create_tar_file
    output = where / "opt-ml-output"
    (output / "data").mkdir(parents=True)
    (output / "data" / "metrics.json").write_text("{}")
    where.mkdir(exist_ok=True)
    create_tar_file([str(p) for p in model_dir.iterdir()], str(where / "model.tar.gz"))
    create_tar_file([str(p) for p in output.iterdir()], str(where / "output.tar.gz"))
    shutil.rmtree(output)
    return where


def sdk_serving_folder(model_data: str, container_root: Path) -> Path:
    """The folder ``estimator.deploy(instance_type="local")`` mounts as /opt/ml/model, made
    by the SDK's own code from ``model_data`` (a file:// archive or folder)."""
    with quiet_sdk():
        from sagemaker.local.image import _SageMakerContainer

        container = SimpleNamespace(
            hosts=["algo-1"], container_root=str(container_root), sagemaker_session=None
        )
        prepare = _SageMakerContainer._prepare_serving_volumes
        volumes = prepare(container, model_data)  # type: ignore[arg-type]
    return Path(volumes[0].host_dir)


@contextmanager
def quiet_sdk() -> Iterator[None]:
    """The SDK's notices (v2 deprecation, FutureWarnings) silenced for the duration."""
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("ignore")
        patch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
        yield


@pytest.mark.parametrize("kind", ["xgboost", "kmeans"])
@pytest.mark.parametrize("model_data", ["model.tar.gz", "the job's folder"])
def test_the_sdk_train_then_deploy_folder_serves_the_model(
    tmp_path: Path, xgb_binary_dir: Path, kmeans_model_dir: Path, kind: str, model_data: str
) -> None:
    source = xgb_binary_dir if kind == "xgboost" else kmeans_model_dir
    job = training_job_output(source, tmp_path / "job")
    url = (job / "model.tar.gz").as_uri() if model_data == "model.tar.gz" else job.as_uri()
    folder = sdk_serving_folder(url, tmp_path / "container")
    assert {"model.tar.gz", "output.tar.gz"} < {p.name for p in folder.iterdir()}
    algorithm = load_algorithm(Settings(model_dir=folder, xgboost_device="cpu"))
    assert isinstance(algorithm, XGBoost if kind == "xgboost" else KMeans)


def test_training_output_with_unrelated_model_files_is_refused(
    tmp_path: Path, xgb_binary_dir: Path
) -> None:
    job = training_job_output(xgb_binary_dir, tmp_path / "job")
    folder = sdk_serving_folder(job.as_uri(), tmp_path / "container")
    shutil.copy(folder / "xgboost-model", folder / "xgboost-model-7")
    with pytest.raises(ModelLoadError, match=r"no archive holds xgboost-model-7\); keep either"):
        load_algorithm(Settings(model_dir=folder))


def test_archive_in_a_folder_is_unpacked_elsewhere(tmp_path: Path, kmeans_model_dir: Path) -> None:
    # SageMaker mounts SM_MODEL_DIR read-only: nothing may be written next to the archive.
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    pack(kmeans_model_dir, model_dir / "model.tar.gz")
    before = sorted(p.name for p in model_dir.rglob("*"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with opened_model_dir(model_dir, scratch_parent=scratch) as files_dir:
        assert files_dir.parent == scratch
        assert (files_dir / "model_algo-1").is_file()
    assert sorted(p.name for p in model_dir.rglob("*")) == before
    assert scratch_entries(scratch) == []


def test_nested_archive_is_refused(tmp_path: Path, kmeans_model_dir: Path) -> None:
    inner = pack(kmeans_model_dir, tmp_path / "inner.tar.gz")
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    with tarfile.open(model_dir / "model.tar.gz", "w:gz") as tar:
        tar.add(inner, arcname="model.tar.gz")
    with pytest.raises(ModelLoadError, match=r"holds another archive \(model.tar.gz\)"):
        load_algorithm(Settings(model_dir=model_dir))


def test_unpacking_past_the_limit_is_refused_from_the_headers(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    header_only_archive(model_dir / "model.tar.gz", {"xgboost-model": 3 * 1024 * MIB})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with (
        pytest.raises(
            ModelLoadError, match="more than 2048 MiB, the SMSERVE_MAX_MODEL_UNPACKED_MB"
        ),
        opened_model_dir(model_dir, scratch_parent=scratch),
    ):
        pass
    assert scratch_entries(scratch) == []


def test_the_limit_counts_every_member(tmp_path: Path) -> None:
    members = [(f"xgboost-model-{i}", bytes(400 * 1024)) for i in range(3)]
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ModelLoadError, match="more than 1 MiB"):
        load_algorithm(Settings(model_dir=tmp_path, max_model_unpacked_bytes=MIB))


def test_unpacking_past_the_free_space_is_refused(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    header_only_archive(model_dir / "model.tar.gz", {"xgboost-model": 2**60})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with (
        pytest.raises(ModelLoadError, match=r"at least \d+ MiB but only \d+ MiB are free in"),
        opened_model_dir(model_dir, 2**62, scratch_parent=scratch),
    ):
        pass
    assert scratch_entries(scratch) == []


def test_a_setting_raises_the_limit(tmp_path: Path, kmeans_model_dir: Path) -> None:
    pack(kmeans_model_dir, tmp_path / "model.tar.gz")
    size = (kmeans_model_dir / "model_algo-1").stat().st_size
    with pytest.raises(ModelLoadError, match="SMSERVE_MAX_MODEL_UNPACKED_MB"):
        with opened_model_dir(tmp_path, size - 1):
            pass
    with opened_model_dir(tmp_path, size) as files_dir:
        assert (files_dir / "model_algo-1").stat().st_size == size


def test_pythons_without_extraction_filters_unpack_checked_members(
    tmp_path: Path, kmeans_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Debian bookworm's Python 3.11.2 (the image's stand-in base) predates tarfile's filters;
    # the container test serves an archive on it too.
    monkeypatch.delattr(tarfile, "data_filter")
    (kmeans_model_dir / "model_algo-1").chmod(0o4755)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    pack(kmeans_model_dir, model_dir / "model.tar.gz")
    with opened_model_dir(model_dir, scratch_parent=tmp_path) as files_dir:
        assert (files_dir / "model_algo-1").stat().st_mode & 0o7777 == 0o755
    assert isinstance(load_algorithm(Settings(model_dir=model_dir)), KMeans)
    with tarfile.open(model_dir / "model.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("../evil")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(ModelLoadError, match="refusing to unpack"):
        load_algorithm(Settings(model_dir=model_dir))
    assert not (tmp_path / "evil").exists()


def test_local_mode_folder_of_a_dot_rooted_archive(tmp_path: Path, kmeans_model_dir: Path) -> None:
    # `tar czf model.tar.gz -C model .` names members ./model_algo-1, with a "." entry.
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    with tarfile.open(model_dir / "model.tar.gz", "w:gz") as tar:
        tar.add(kmeans_model_dir, arcname=".")
    with tarfile.open(model_dir / "model.tar.gz") as tar:
        tar.extractall(model_dir, filter="data")
    with opened_model_dir(model_dir, scratch_parent=tmp_path) as files_dir:
        assert files_dir == model_dir
