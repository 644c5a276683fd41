"""On a multi-model endpoint, a model loaded through the registry (``POST /models``) answers
over gRPC with the numbers ``/invocations`` gives; unloaded, it is NOT_FOUND. A second
registry over the same run directory stands for another worker: it sees the same entries."""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc
import numpy as np
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc.service_pb2_grpc import GRPCInferenceServiceStub

from smserve.config import Settings
from smserve.repository import runtime
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.modes import open_models
from tests.v2grpc.conftest import ROWS, Start, raw_outputs, raw_request, rpc_error


def test_a_registered_model_answers_until_unloaded(
    tmp_path: Path, kmeans_model_dir: Path, start_server: Start
) -> None:
    shutil.copytree(kmeans_model_dir, tmp_path / "models" / "alpha")
    settings = runtime.prepare(
        Settings(multi_model=True, models_dir=tmp_path / "models", runtime_dir=tmp_path / "run")
    )
    admin, worker = open_models(settings), open_models(settings)
    assert isinstance(admin, MultiModelRegistry)
    admin.load("alpha", "alpha")
    with grpc.insecure_channel(start_server(worker)) as channel:
        stub = GRPCInferenceServiceStub(channel)
        assert stub.ModelReady(pb.ModelReadyRequest(name="alpha")).ready
        got = raw_outputs(stub.ModelInfer(raw_request("alpha", ROWS)))
        service = admin.resolve("alpha").service
        csv = "\n".join(",".join(str(v) for v in row) for row in ROWS.tolist()).encode()
        reply = service.invoke(csv, "text/csv", "text/csv")
        assert reply is not None
        want = np.loadtxt(reply.body.decode().splitlines(), delimiter=",", ndmin=2)
        np.testing.assert_allclose(got["closest_cluster"], want[:, 0])
        np.testing.assert_allclose(got["distance_to_cluster"], want[:, 1], rtol=1e-6)
        admin.unload("alpha")
        error = rpc_error(lambda: stub.ModelInfer(raw_request("alpha", ROWS)))
        assert error.code() == grpc.StatusCode.NOT_FOUND
        assert not stub.ModelReady(pb.ModelReadyRequest(name="alpha")).ready
