"""Wide answers from a worker with several request threads (``SMSERVE_THREADS=4``): while one
request's answer is predicted and written in overlapping chunks, the others arriving meanwhile
are predicted whole on the worker's threads (``overlap``'s helper is busy). Every answer, as
CSV and JSON Lines, is the bytes of the same request sent alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from smserve.overlap import MIN_ROWS
from tests.process.servers import Server, running_server

pytestmark = pytest.mark.process

ATTRIBUTES = {"X-Amzn-SageMaker-Custom-Attributes": "outputs=score,approximate_contributions"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(8)
    x = rng.normal(size=(400, 12)).astype(np.float32)
    booster = xgb.train(
        {"max_depth": 4, "nthread": 1}, xgb.DMatrix(x, x[:, 0] > 0), num_boost_round=20
    )
    model_dir = tmp_path_factory.mktemp("overlap-threads-model")
    (model_dir / "xgboost-model").write_bytes(booster.save_raw("json"))
    env = {"SM_MODEL_DIR": str(model_dir), "SMSERVE_THREADS": "4"}
    with running_server(tmp_path_factory.mktemp("overlap-threads-logs"), env) as started:
        yield started


def csv_body(n_rows: int, seed: int) -> bytes:
    rows = np.random.default_rng(seed).normal(size=(n_rows, 12))
    rows[rows > 2.5] = np.nan  # missing values take the default branches
    return "\n".join(",".join("" if np.isnan(v) else f"{v:.5f}" for v in r) for r in rows).encode()


def answer(server: Server, body: bytes, accept: str) -> bytes:
    connection = server.connection(timeout_s=60)
    headers = {"Content-Type": "text/csv", "Accept": accept, **ATTRIBUTES}
    connection.request("POST", "/invocations", body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    assert response.status == 200, data[:300]
    return data


@pytest.mark.parametrize("accept", ["text/csv", "application/jsonlines"])
def test_concurrent_wide_answers_are_the_bytes_of_each_alone(server: Server, accept: str) -> None:
    bodies = [csv_body(MIN_ROWS + 1500, 1), csv_body(MIN_ROWS, 2), csv_body(300, 3)]
    alone = [answer(server, body, accept) for body in bodies]
    assert [a.count(b"\n") for a in alone] == [MIN_ROWS + 1500, MIN_ROWS, 300]
    mismatches: list[tuple[int, int]] = []

    def client(index: int) -> None:
        for turn in range(4):
            which = (index + turn) % len(bodies)
            if answer(server, bodies[which], accept) != alone[which]:
                mismatches.append((index, which))

    clients = [threading.Thread(target=client, args=(index,)) for index in range(6)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    assert mismatches == []
