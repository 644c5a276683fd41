"""The Ray engine called in-process, this process a driver of the two-node loopback
cluster (``ray_cluster``): the same outputs as the local engine on multi-file inputs, and
ModelScorer on Dataset batches. ``test_ray_cluster`` runs the command against the same
cluster. Few tests on purpose: each Ray job takes seconds on two cores."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from smserve.config import Settings
from smserve.scoring.engine import Summary, score_files
from smserve.scoring.inputs import discover
from smserve.scoring.options import Plan, Run
from smserve.scoring.progress import Progress
from tests.scoring.conftest import csv_body, outputs, write_inputs
from tests.scoring.ray_cluster import TwoNodeCluster

ray = pytest.importorskip("ray")

# Ray's own deprecation notices (its DataContext warns about its own defaults).
pytestmark = [pytest.mark.process, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")]


@pytest.fixture(scope="module")
def cluster(ray_cluster: TwoNodeCluster) -> Iterator[None]:
    """This process connected to the cluster as a driver, for the module's tests. It starts
    no Ray process, so ``ray.shutdown`` has none to stop: a local ``ray.init`` here gave a
    ResourceWarning on a loaded machine (Ray waits one second for each process it kills,
    then drops the handle of one not yet reaped)."""
    ray.init(address=ray_cluster.address, configure_logging=False)
    yield
    ray.shutdown()


def _both(model_dir: Path, inputs: Path, out: Path, plan: Plan) -> tuple[Summary, Summary]:
    """The local engine's summary and outputs, then Ray's, on the same inputs."""
    from smserve.scoring.ray.engine import score_files_on_ray

    settings = Settings.from_env({}).replace(model_dir=model_dir, batch_mode=True)
    run = Run(max_payload_bytes=256, workers=2)  # several shards in the larger files
    local = score_files(discover([str(inputs)], out / "local"), settings, plan, run, _quiet())
    on_ray = score_files_on_ray(discover([str(inputs)], out / "ray"), settings, plan, run, _quiet())
    return local, on_ray


def _quiet() -> Progress:
    return Progress(io.StringIO(), None, is_tty=False, interval_s=3600)


def test_csv_shards_match_the_local_engine(cluster: None, model_dir: Path, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", "text/csv")
    plan = Plan(content_type="text/csv", accept="application/jsonlines")
    local, on_ray = _both(model_dir, tmp_path / "in", tmp_path, plan)
    assert local.scored == on_ray.scored == 3
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")


def test_a_running_cluster_is_left_connected_with_every_cpu_free_again(
    cluster: None, model_dir: Path, tmp_path: Path
) -> None:
    """The engine's actors (half a CPU each) are stopped when the job ends: the cluster's CPUs
    are all free again, and this process, connected before, is still connected."""
    write_inputs(tmp_path / "in", "text/csv")
    _both(model_dir, tmp_path / "in", tmp_path, Plan(content_type="text/csv"))
    assert ray.is_initialized()  # connected before the engine ran, so not shut down by it
    deadline = time.monotonic() + 60  # the raylets report freed resources a moment later
    while ray.available_resources().get("CPU") != ray.cluster_resources()["CPU"]:
        assert time.monotonic() < deadline, ray.available_resources()
        time.sleep(0.1)


def test_a_ragged_file_fails_exactly_as_locally(
    cluster: None, model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_inputs(tmp_path / "in", "text/csv")
    rows = np.ones((5, 4), dtype=np.float32)
    (tmp_path / "in" / "ragged.data").write_bytes(csv_body(rows) + b"1,2\n")
    local, on_ray = _both(model_dir, tmp_path / "in", tmp_path, Plan(content_type="text/csv"))
    assert caplog.text.count("ragged.data: failed, no output written: record 6:") == 2
    assert (local.scored, local.failed) == (on_ray.scored, on_ray.failed) == (3, 1)
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")


def test_json_lines_joined_file_by_file_match_the_local_engine(
    cluster: None, model_dir: Path, tmp_path: Path
) -> None:
    write_inputs(tmp_path / "in", "application/jsonlines")
    plan = Plan(
        content_type="application/jsonlines", accept="application/json", join_source="Input"
    )
    local, on_ray = _both(model_dir, tmp_path / "in", tmp_path, plan)
    assert local.scored == on_ray.scored == 3
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")


def test_model_scorer_gives_the_endpoints_output_keys(cluster: None, model_dir: Path) -> None:
    import ray.data

    from smserve.algorithms.loading import load_algorithm
    from smserve.scoring.ray import ModelScorer
    from smserve.types import Batch

    x = np.random.default_rng(5).normal(size=(50, 4)).astype(np.float32)
    items = [{"id": i, **{f"f{j}": float(v) for j, v in enumerate(row)}} for i, row in enumerate(x)]
    environ = {"SAGEMAKER_INFERENCE_OUTPUT": "predicted_label,probabilities"}
    dataset = ray.data.from_items(items).map_batches(
        ModelScorer,
        fn_constructor_kwargs={"model_dir": str(model_dir), "keep": ["id"], "environ": environ},
        batch_format="pandas",
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=0.5,
    )
    rows = sorted(dataset.take_all(), key=lambda row: row["id"])
    settings = Settings.from_env(environ).replace(model_dir=model_dir)
    expected = load_algorithm(settings).predict(Batch(x)).outputs
    assert set(rows[0]) == {"id", "predicted_label", "probabilities"}
    np.testing.assert_array_equal([r["predicted_label"] for r in rows], expected["predicted_label"])
    np.testing.assert_array_equal(
        np.stack([r["probabilities"] for r in rows]), expected["probabilities"]
    )
