"""SDK v3 ``ModelTrainer`` in ``Mode.LOCAL_CONTAINER`` training with the image, for XGBoost
and k-means, then deploying its artifact (``<local_container_root>/compressed_artifacts/
model.tar.gz``) with ``LocalSession``: answers equal to in-process predictions of the model it
trained. The SDK's compose file has no command, so the image's own default runs: inside the
training layout that trains (as ``IMAGE train`` would). The train channel is given as a
single file, which the SDK mounts as a file: the image reads it as a one-file channel.
``train()`` returns None in local mode and trusts compose's exit status (never reading
/opt/ml/output/failure): the test checks the artifact itself."""

from __future__ import annotations

import tarfile
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.local_mode_v3 import v3_local as v3

# The SDK's local trainer leaves the pipe of the compose process it ran unclosed.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

CONTENT_TYPES = {"xgboost": "text/csv", "kmeans": "text/csv;label_size=0"}
HYPERPARAMETERS = {
    "xgboost": {"num_round": "5", "objective": "binary:logistic", "max_depth": "2"},
    "kmeans": {"k": "3", "feature_dim": "4", "mini_batch_size": "30"},
}


def training_csv(path: Path, algorithm: str) -> np.ndarray:
    """Labelled CSV (label first) for XGBoost, features only for k-means; the features."""
    rows = np.vstack([v3.CENTROIDS + noise for noise in np.linspace(-1, 1, 20)[:, None]])
    labels = (rows[:, 0] > 5).astype(np.float32)
    table = np.column_stack([labels, rows]) if algorithm == "xgboost" else rows
    np.savetxt(path, table, delimiter=",", fmt="%.6g")
    return rows.astype(np.float32)


def unpacked(archive: Path, target: Path) -> Path:
    target.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


@pytest.mark.parametrize("algorithm", ["xgboost", "kmeans"])
def test_model_trainer_local_container_trains_then_deploys(
    image: str, algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute, InputData
    from sagemaker.train.model_trainer import Mode

    (tmp_path / "data").mkdir()
    train_file = tmp_path / "data" / "train.csv"
    rows = training_csv(train_file, algorithm)
    # Compose names its project after this folder: a unique name keeps runs apart.
    root = tmp_path / f"smserve-v3-train-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    trainer = ModelTrainer(
        training_image=image,
        training_mode=Mode.LOCAL_CONTAINER,
        role=v3.ROLE,
        compute=Compute(instance_type="local_cpu", instance_count=1),
        hyperparameters={"algorithm": algorithm, **HYPERPARAMETERS[algorithm]},
        input_data_config=[
            InputData(
                channel_name="train",
                data_source=str(train_file),
                content_type=CONTENT_TYPES[algorithm],
            )
        ],
        local_container_root=str(root),
    )
    trainer.train()
    artifact = root / "compressed_artifacts" / "model.tar.gz"
    assert artifact.is_file()
    model_dir = unpacked(artifact, tmp_path / "trained")
    assert sorted(p.name for p in model_dir.iterdir()) == [
        "xgboost-model" if algorithm == "xgboost" else "model_algo-1"
    ]
    answer = v3.local_session_csv(image, artifact, tmp_path / "serving", monkeypatch, rows)
    v3.assert_answer(algorithm, model_dir, rows, answer)
