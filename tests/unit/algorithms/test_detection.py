"""Algorithms claim model files by what they hold: a ``model_algo-1`` of one array is
k-means', PCA's (``s``, ``v``, ``mean``) or a zip is nobody's here and is refused saying what
it looks like, and a third algorithm whose files are also ``model_algo-1`` is one package
(``tests.unit.algorithms.pca``) plus its line in a table the test supplies."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from smserve import demo
from smserve.algorithms import catalog
from smserve.algorithms.footprint import PER_MODEL
from smserve.algorithms.heads import model_files
from smserve.algorithms.kmeans import KMEANS
from smserve.algorithms.loading import load_algorithm
from smserve.algorithms.lookalikes import looks_like
from smserve.algorithms.ndarray import write_ndarray_dict, write_ndarray_file
from smserve.algorithms.ndarray_head import MAX_ARRAYS, read_list_head
from smserve.algorithms.xgboost import XGBOOST
from smserve.cli import _parser
from smserve.config import Settings
from smserve.errors import ConfigError, ModelLoadError
from smserve.http.app import create_app
from smserve.types import Batch
from tests.unit.algorithms.pca import PCA

SERVED = "this image serves k-means and XGBoost"


def pca_file(model_dir: Path, d: int = 4, components: int = 2) -> Path:
    """A SageMaker PCA ``model_algo-1``: the dict ``s``, ``v``, ``mean`` (``mx.nd.save``)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    arrays = {
        "s": rng.random(components, dtype=np.float32),
        "v": rng.random((d, components), dtype=np.float32),
        "mean": rng.random((1, d), dtype=np.float32),
    }
    write_ndarray_dict(model_dir / "model_algo-1", arrays)
    return model_dir / "model_algo-1"


def load(model_dir: Path, algorithm: str | None = None) -> object:
    return load_algorithm(Settings(model_dir=model_dir, algorithm=algorithm))


def test_a_pca_model_is_refused_saying_what_it_is(tmp_path: Path) -> None:
    path = pca_file(tmp_path)
    message = f"{path} is a SageMaker PCA model (arrays s, v, mean): {SERVED}"
    with pytest.raises(ModelLoadError) as info:
        load(tmp_path)
    assert str(info.value) == message


def test_a_pca_model_in_an_archive_is_refused_too(tmp_path: Path) -> None:
    pca_file(tmp_path / "files", d=64, components=8)  # past the first bytes read
    (tmp_path / "model").mkdir()
    with tarfile.open(tmp_path / "model" / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "files" / "model_algo-1", "model_algo-1")
    with pytest.raises(ModelLoadError, match=r"is a SageMaker PCA model \(arrays s, v, mean\)"):
        load(tmp_path / "model")
    # the budget's estimate leaves the refusal to the load: it costs the fixed part alone
    assert catalog.estimate(Settings(), tmp_path / "model") == PER_MODEL
    # a file inside an archive, known by its first bytes alone, is described by its count
    (member,) = model_files(tmp_path / "model")
    assert member.path is None
    assert looks_like(member) == "an MXNet NDArray file holding 3 arrays (float32 (8,), ...)"


def test_forced_kmeans_names_what_the_model_algo_1_is(tmp_path: Path) -> None:
    pca_file(tmp_path)
    with pytest.raises(
        ModelLoadError, match="no k-means model .*; model_algo-1 is a SageMaker PCA"
    ):
        load(tmp_path, algorithm="kmeans")


def test_a_zip_model_algo_1_is_refused_naming_its_first_entry(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "model_algo-1", "w") as archive:
        archive.writestr("mx-mod-symbol.json", "{}")
        archive.writestr("mx-mod-0000.params", b"\0" * 8)
    with pytest.raises(ModelLoadError, match=r"a zip archive .*first entry mx-mod-symbol.json"):
        load(tmp_path)


def test_an_unnamed_list_of_two_arrays_is_described_by_shapes(tmp_path: Path) -> None:
    header = struct.pack("<QQQ", 0x112, 0, 2)
    write_ndarray_dict(tmp_path / "x", {"a": np.ones((2, 3), np.float32), "b": np.ones(3)})
    body = (tmp_path / "x").read_bytes()[24:]
    names_at = body.rindex(struct.pack("<Q", 2))  # strip the names: an unnamed list
    (tmp_path / "x").unlink()
    (tmp_path / "model_algo-1").write_bytes(header + body[:names_at] + struct.pack("<Q", 0))
    expected = r"holding 2 arrays \(float32 \(2, 3\), float64 \(3,\)\): this image serves"
    with pytest.raises(ModelLoadError, match=expected):
        load(tmp_path)


def test_the_built_ins_files_are_still_claimed(
    kmeans_model_dir: Path, xgb_binary_dir: Path, tmp_path: Path
) -> None:
    assert load(kmeans_model_dir).name == "kmeans"  # type: ignore[attr-defined]
    assert load(xgb_binary_dir).name == "xgboost"  # type: ignore[attr-defined]
    write_ndarray_file(tmp_path / "model_algo-1", np.ones((2, 3), np.float32), name="centroids")
    assert load(tmp_path).name == "kmeans"  # type: ignore[attr-defined]


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_describing_a_file_reads_a_bounded_number_of_bytes() -> None:
    # a billion declared arrays of 1,000,000 x 1,000 float64, and the bytes of a few
    array = struct.pack("<Iii2q", 0xF993FAC9, 0, 2, 1_000_000, 1_000) + struct.pack("<iii", 1, 0, 1)
    hostile = struct.pack("<QQQ", 0x112, 0, 10**9) + array * 100
    stream = CountingStream(hostile)
    described = read_list_head(stream)
    assert described is not None
    assert described.count == 10**9
    assert not described.complete
    assert stream.bytes_read <= 24 + 40  # the data of the first does not exist: stop there
    small = struct.pack("<Iii1q", 0xF993FAC9, 0, 1, 1) + struct.pack("<iii", 1, 0, 0) + b"\0" * 4
    stream = CountingStream(struct.pack("<QQQ", 0x112, 0, 10**9) + small * (MAX_ARRAYS * 4))
    described = read_list_head(stream)
    assert described is not None
    assert len(described.arrays) == MAX_ARRAYS
    assert stream.bytes_read <= 24 + MAX_ARRAYS * 32


@pytest.fixture
def with_pca(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table with the test algorithm's line added; k-means' entry as it is."""
    monkeypatch.setattr(catalog, "ALGORITHMS", (KMEANS, PCA, XGBOOST))


@pytest.mark.usefixtures("with_pca")
def test_a_third_algorithm_claims_its_model_algo_1(tmp_path: Path, kmeans_model_dir: Path) -> None:
    pca_file(tmp_path / "pca")
    model = load_algorithm(Settings(model_dir=tmp_path / "pca"))
    assert model.name == "pca"
    rows = np.zeros((2, 4), np.float32)
    assert model.predict(Batch(rows)).outputs["projection"].shape == (2, 2)
    assert load(kmeans_model_dir).name == "kmeans"  # type: ignore[attr-defined]
    assert catalog.served() == "k-means, PCA and XGBoost"


@pytest.mark.usefixtures("with_pca")
def test_the_third_algorithm_is_served(tmp_path: Path) -> None:
    pca_file(tmp_path)
    client = create_app(Settings(model_dir=tmp_path)).test_client()
    reply = client.post("/invocations", data="1,2,3,4\n", content_type="text/csv")
    assert reply.status_code == 200, reply.data
    assert len(reply.get_json()["predictions"][0]["projection"]) == 2


@pytest.mark.usefixtures("with_pca")
def test_an_algorithm_without_trainer_or_demo_is_left_out_of_train_and_demo(
    tmp_path: Path,
) -> None:
    assert catalog.trainable() == catalog.with_demo() == ("kmeans", "xgboost")
    with pytest.raises(ConfigError, match="algorithm 'pca' has no trainer"):
        catalog.trainer_of("pca")
    with pytest.raises(ConfigError, match="algorithm 'pca' has no demo"):
        demo.prepare("pca", Settings(cache_dir=tmp_path))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--demo", "pca"])


@pytest.mark.usefixtures("with_pca")
def test_a_tf_serving_model_config_may_name_the_third_algorithm() -> None:
    from smserve.repository.config import parse_model_server_config

    text = 'model_config_list { config { name: "p" base_path: "/p" model_platform: "pca" } }'
    assert parse_model_server_config(text)[0].platform == "pca"
    assert catalog.spec_for("PCA") is PCA
