"""KServe's own Python client (``kserve.InferenceGRPCClient``) against a server's gRPC door,
run by ``test_kserve_client.py`` in ``.venv-kserve``: kserve pins versions of packages this
project's environment cannot share (protobuf, pandas, psutil), so it lives in a virtual
environment of its own (``./run-tests`` makes it). Prints what the client got, as JSON.

    .venv-kserve/bin/python tests/v2grpc/kserve_client.py HOST:PORT MODEL ROWS_JSON
"""

import asyncio
import json
import sys

import numpy as np
from kserve import InferenceGRPCClient, InferInput, InferRequest


async def main(address: str, model: str, rows: np.ndarray) -> dict:
    client = InferenceGRPCClient(address, timeout=30)
    seen = {
        "live": await client.is_server_live(),
        "ready": await client.is_server_ready(),
        "model_ready": await client.is_model_ready(model),
        "unknown_ready": await client.is_model_ready("nope"),
    }
    for binary in (True, False):
        tensor = InferInput("input__0", list(rows.shape), "FP32")
        tensor.set_data_from_numpy(rows, binary_data=binary)
        response = await client.infer(InferRequest(model, [tensor], request_id="k-1"))
        seen[f"binary={binary}"] = {
            "id": response.id,
            "outputs": {o.name: o.as_numpy().tolist() for o in response.outputs},
        }
    await client.close()
    return seen


if __name__ == "__main__":
    address, model, rows = sys.argv[1], sys.argv[2], np.array(json.loads(sys.argv[3]), "float32")
    print(json.dumps(asyncio.run(main(address, model, rows))))
