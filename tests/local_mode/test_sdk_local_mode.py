"""The image under the SageMaker Python SDK's local mode, as a user tests a container before
deploying it: ``Model(...).deploy(instance_type="local")`` from a ``file://`` model.tar.gz (the
SDK extracts it next to itself and mounts that folder), predictions through
``sagemaker.predictor.Predictor``, and a local ``Transformer`` batch job. Every answer is
compared with the same model served in this process."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON, JSONLINES
from tests.local_mode import sdk_local

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from sagemaker.deserializers import JSONDeserializer, RecordDeserializer
    from sagemaker.predictor import Predictor
    from sagemaker.serializers import CSVSerializer, RecordSerializer
    from sagemaker.transformer import Transformer

N_FEATURES = 100  # wide rows: 1 MiB mini-batches of a few hundred records
ROWS_PER_FILE = (900, 600, 1300)  # about 1.8, 1.2 and 2.6 MB of CSV: 2 to 3 mini-batches each
RNG = np.random.default_rng(11)
FEATURES = RNG.normal(size=(sum(ROWS_PER_FILE), N_FEATURES)).astype(np.float32)
CENTROIDS = RNG.normal(size=(5, N_FEATURES)).astype(np.float32)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("local-mode")
    with sdk_local.offline_sdk(root):
        yield root


@pytest.fixture(scope="module")
def archives(work: Path) -> dict[str, Path]:
    """A model.tar.gz per algorithm, each in its own folder (the SDK extracts beside it)."""
    return {
        "xgboost": sdk_local.pack(
            {"xgboost-model": sdk_local.xgboost_model(FEATURES)}, work / "xgboost"
        ),
        "kmeans": sdk_local.pack(
            {"model_algo-1": sdk_local.kmeans_model(CENTROIDS, work / "centroids")},
            work / "kmeans",
        ),
    }


@pytest.fixture(scope="module")
def in_process(archives: dict[str, Path]) -> dict[tuple[str, bool], FlaskClient]:
    """The same models served in this process, keyed by (algorithm, Batch Transform mode)."""
    clients = {}
    for kind, archive in archives.items():
        for batch in (False, True):
            environ = {"SM_MODEL_DIR": str(archive.parent), "SAGEMAKER_BATCH": str(batch)}
            clients[kind, batch] = create_app(Settings.from_env(environ)).test_client()
    return clients


def reference(client: FlaskClient, body: bytes, content_type: str, accept: str) -> bytes:
    response = client.post(
        "/invocations", data=body, headers={"Content-Type": content_type, "Accept": accept}
    )
    assert response.status_code == 200, response.data
    return response.data


def csv_rows(rows: np.ndarray) -> bytes:
    return b"".join(b",".join(repr(float(v)).encode() for v in row) + b"\n" for row in rows)


def test_telemetry_is_off(work: Path) -> None:
    assert sdk_local.telemetry_opted_out(sdk_local.local_session(work))


@pytest.mark.parametrize("kind", ["xgboost", "kmeans"])
def test_deploy_and_predict_csv_to_json(
    image: str,
    work: Path,
    archives: dict[str, Path],
    in_process: dict[tuple[str, bool], FlaskClient],
    kind: str,
) -> None:
    session = sdk_local.local_session(work)
    rows = FEATURES[:25]
    with sdk_local.deployed(image, archives[kind], session) as endpoint:
        predictor = Predictor(
            endpoint,
            sagemaker_session=session,
            serializer=CSVSerializer(),
            deserializer=JSONDeserializer(),
        )
        answer = predictor.predict(rows)
    # The SDK extracted the archive next to itself: the container served that folder.
    assert (
        archives[kind].parent / ("xgboost-model" if kind == "xgboost" else "model_algo-1")
    ).is_file()
    expected = json.loads(reference(in_process[kind, False], csv_rows(rows), CSV, JSON))
    assert answer == expected
    assert len(answer["predictions"]) == len(rows)


def test_kmeans_recordio_round_trip(image: str, work: Path, archives: dict[str, Path]) -> None:
    session = sdk_local.local_session(work)
    rows = FEATURES[:40]
    with sdk_local.deployed(image, archives["kmeans"], session) as endpoint:
        predictor = Predictor(
            endpoint,
            sagemaker_session=session,
            serializer=RecordSerializer(),
            deserializer=RecordDeserializer(),
        )
        records = predictor.predict(rows)
    clusters = [r.label["closest_cluster"].float32_tensor.values[0] for r in records]
    distances = [r.label["distance_to_cluster"].float32_tensor.values[0] for r in records]
    exact = np.linalg.norm(rows[:, None, :].astype(np.float64) - CENTROIDS[None], axis=2)
    np.testing.assert_array_equal(clusters, exact.argmin(axis=1))
    np.testing.assert_allclose(distances, exact.min(axis=1), rtol=1e-4)


def write_inputs(folder: Path) -> list[Path]:
    folder.mkdir()
    bounds = np.cumsum((0, *ROWS_PER_FILE))
    paths = []
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        paths.append(folder / f"part-{i}.csv")
        paths[-1].write_bytes(csv_rows(FEATURES[start:stop]))
    return paths


@pytest.mark.parametrize(("kind", "accept"), [("xgboost", CSV), ("kmeans", JSONLINES)])
def test_batch_transform_matches_in_process_predictions_line_for_line(
    image: str,
    work: Path,
    archives: dict[str, Path],
    in_process: dict[tuple[str, bool], FlaskClient],
    kind: str,
    accept: str,
) -> None:
    session = sdk_local.local_session(work)
    inputs = write_inputs(work / f"{kind}-input")
    output = work / f"{kind}-output"
    name = f"smserve-transform-{kind}"
    model = sdk_local.sdk_model(image, archives[kind], session)
    session.create_model(name, sdk_local.ROLE, model.prepare_container_def(instance_type="local"))
    transformer = Transformer(
        name,
        1,
        "local",
        strategy="MultiRecord",
        assemble_with="Line",
        output_path=f"file://{output}",
        accept=accept,
        max_payload=1,
        sagemaker_session=session,
    )
    with sdk_local.stopped_cleanly():
        transformer.transform(
            f"file://{inputs[0].parent}",
            content_type=CSV,
            split_type="Line",
            wait=False,
            logs=False,
        )
    for path in inputs:
        produced = (output / f"{path.name}.out").read_bytes()
        # AssembleWith=Line adds "\n" after each response, and each response ends in one: so
        # every mini-batch is followed by exactly one empty line.
        batches = produced.split(b"\n\n")
        assert batches[-1] == b""
        assert len(batches) - 1 >= 2, f"{path.name}: one mini-batch; max_payload did not split it"
        lines = b"\n".join(batches[:-1]).split(b"\n")
        expected = reference(in_process[kind, True], path.read_bytes(), CSV, accept).splitlines()
        assert len(lines) == len(expected) == len(path.read_bytes().splitlines())
        assert lines == expected
