"""The SageMaker SDK's whole local workflow with the image, as a user runs it before paying for
an instance: ``Estimator(image_uri=..., instance_type="local").fit(...)`` on local files, then
``estimator.deploy(instance_type="local")`` (the SDK extracts *every* archive of the training
job's output, ``model.tar.gz`` and ``output.tar.gz``, beside them and mounts that folder as
/opt/ml/model), predictions through the returned ``Predictor`` (CSV) and, for k-means, a
``Predictor`` speaking RecordIO, then ``estimator.transformer(...).transform(...)`` over several
files in several mini-batches, each endpoint deleted. Every answer is compared with the trained
model served in this process.

XGBoost trains from a ``TrainingInput`` declaring ``text/csv``; k-means from a plain
``"file://..."`` channel in its default format, RecordIO-protobuf (written with the SDK's own
``write_numpy_to_dense_tensor``), as AWS's built-in k-means is fed.
"""

from __future__ import annotations

import io
import json
import tarfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    from sagemaker.estimator import Estimator
    from sagemaker.inputs import TrainingInput
    from sagemaker.predictor import Predictor
    from sagemaker.serializer_utils import write_numpy_to_dense_tensor
    from sagemaker.serializers import CSVSerializer, RecordSerializer

FEATURES = sdk_local.FEATURES
csv_rows = sdk_local.csv_rows

HYPERPARAMETERS = {
    "xgboost": {"algorithm": "xgboost", "objective": "binary:logistic", "num_round": "12"},
    "kmeans": {"algorithm": "kmeans", "k": "4", "feature_dim": str(FEATURES.shape[1])},
}
TRANSFORM_ACCEPT = {"xgboost": CSV, "kmeans": JSONLINES}


class Fitted:
    """An estimator after ``fit``, the output folder it wrote, and its model served here."""

    def __init__(self, kind: str, estimator: Estimator, output: Path, work: Path) -> None:
        self.kind = kind
        self.estimator = estimator
        self.output = output
        self.work = work
        self.in_process = {batch: _serve_here(estimator.model_data, batch) for batch in (0, 1)}


def _serve_here(model_data: str, batch: int) -> FlaskClient:
    """The training job's model.tar.gz unpacked to a folder of its own, served in-process."""
    archive = Path(model_data.removeprefix("file://"))
    folder = archive.parent.parent / f"{archive.parent.name}-unpacked"
    if not folder.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
    environ = {"SM_MODEL_DIR": str(folder), "SAGEMAKER_BATCH": str(bool(batch))}
    return create_app(Settings.from_env(environ)).test_client()


def _training_channel(kind: str, folder: Path) -> Any:
    """Two training files per algorithm, in the format its channel declares (or defaults to)."""
    folder.mkdir()
    labels = (FEATURES[:, 0] + FEATURES[:, 1] > 0).astype(np.float32)
    for i, rows in enumerate(np.array_split(np.arange(len(FEATURES)), 2)):
        if kind == "xgboost":
            table = np.column_stack([labels[rows], FEATURES[rows]])
            (folder / f"part-{i}.csv").write_bytes(csv_rows(table))
        else:
            buffer = io.BytesIO()
            write_numpy_to_dense_tensor(buffer, FEATURES[rows])
            (folder / f"part-{i}.pbr").write_bytes(buffer.getvalue())
    if kind == "xgboost":
        return TrainingInput(f"file://{folder}", content_type=CSV)
    return f"file://{folder}"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("train-deploy")
    with sdk_local.offline_sdk(root):
        yield root


@pytest.fixture(scope="module", params=["xgboost", "kmeans"])
def fitted(request: pytest.FixtureRequest, image: str, work: Path) -> Fitted:
    kind = str(request.param)
    output = work / f"{kind}-output"
    estimator = Estimator(
        image_uri=image,
        role=sdk_local.ROLE,
        instance_count=1,
        instance_type="local",
        output_path=f"file://{output}",
        base_job_name=f"smserve-{kind}",
        hyperparameters=HYPERPARAMETERS[kind],
        sagemaker_session=sdk_local.local_session(work),
    )
    channel = _training_channel(kind, work / f"{kind}-train")
    with sdk_local.stopped_cleanly(), warnings.catch_warnings():
        # The SDK's local training never closes the pipe it reads docker-compose's output from
        # (sagemaker/local/image.py): its ResourceWarning is the SDK's, ignored where it arises.
        warnings.simplefilter("ignore", ResourceWarning)
        estimator.fit({"train": channel}, logs=False)
    return Fitted(kind, estimator, output, work)


def test_fit_leaves_the_model_and_output_archives(fitted: Fitted) -> None:
    assert fitted.estimator.model_data == f"file://{fitted.output}/model.tar.gz"
    assert {p.name for p in fitted.output.iterdir()} == {"model.tar.gz", "output.tar.gz"}


def test_deploy_after_fit_predicts_like_the_model_in_process(fitted: Fitted, image: str) -> None:
    rows = FEATURES[:30]
    session = fitted.estimator.sagemaker_session
    with sdk_local.stopped_cleanly():
        predictor = fitted.estimator.deploy(
            initial_instance_count=1,
            instance_type="local",
            serializer=CSVSerializer(),
            deserializer=JSONDeserializer(),
        )
        try:
            answer = predictor.predict(rows)
            records = None
            if fitted.kind == "kmeans":
                records = Predictor(
                    predictor.endpoint_name,
                    sagemaker_session=session,
                    serializer=RecordSerializer(),
                    deserializer=RecordDeserializer(),
                ).predict(rows)
        finally:
            predictor.delete_endpoint()
    # What the SDK left in the mounted folder: both archives and what each unpacks to.
    assert {"model.tar.gz", "output.tar.gz"} < {p.name for p in fitted.output.iterdir()}
    expected = json.loads(sdk_local.reference(fitted.in_process[0], csv_rows(rows), CSV, JSON))
    assert answer == expected
    assert len(answer["predictions"]) == len(rows)
    if records is not None:
        _check_records(records, expected["predictions"])


def _check_records(records: list[Any], expected: list[dict[str, float]]) -> None:
    clusters = [r.label["closest_cluster"].float32_tensor.values[0] for r in records]
    distances = [r.label["distance_to_cluster"].float32_tensor.values[0] for r in records]
    assert clusters == [row["closest_cluster"] for row in expected]
    np.testing.assert_allclose(distances, [row["distance_to_cluster"] for row in expected])


def test_transformer_after_fit_matches_the_model_in_process_line_for_line(
    fitted: Fitted,
) -> None:
    inputs = sdk_local.write_inputs(fitted.work / f"{fitted.kind}-transform-input")
    output = fitted.work / f"{fitted.kind}-transform-output"
    accept = TRANSFORM_ACCEPT[fitted.kind]
    transformer = fitted.estimator.transformer(
        1,
        "local",
        strategy="MultiRecord",
        assemble_with="Line",
        output_path=f"file://{output}",
        accept=accept,
        max_payload=1,
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
        expected = sdk_local.reference(fitted.in_process[1], path.read_bytes(), CSV, accept)
        assert sdk_local.assembled_lines(produced, path.name) == expected.splitlines()
