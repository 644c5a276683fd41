"""Multi-model endpoint requests for fuzz.py (a server with SAGEMAKER_MULTI_MODEL=true and two
models registered, ``xgboost`` and ``kmeans``): invocations through ``/models/<name>/invoke``
or the target-model header, and the ``/models`` routes themselves with odd names, pages and
registration documents, urls that lead outside the models directory (``..``, absolute paths,
links made by fuzz.py) among them. Only scratch names are ever registered or deleted, so both
models stay served."""

from __future__ import annotations

import json
import random

from bench.fuzz.fuzz_bodies import Bodies
from bench.fuzz.fuzz_mutations import mutate
from bench.fuzz.fuzz_requests import Fuzzed, invocation

SERVED = ("xgboost", "kmeans")
SCRATCH = ("scratch-a", "scratch-b")  # at most these two are ever registered by the fuzz
NAMES = (*SERVED, *SCRATCH, "nope", "x/../xgboost", "%2e%2e", "..", "x..y", "é", "a" * 1100, "")
# escape (a folder link) and linked-out (a file link) lead outside the models directory
URLS = (*SERVED, "nope", "../..", "/etc", "", "xgboost/xgboost-model", "./kmeans", "escape")
URLS += ("linked-out", "kmeans/../xgboost", "../xgboost", "/proc/self")
TARGET = b"X-Amzn-SageMaker-Target-Model"


def mme(r: random.Random, bodies: Bodies) -> Fuzzed:
    return r.choice((_invoke, _invoke, _invoke, _admin))(r, bodies)


def _invoke(r: random.Random, bodies: Bodies) -> Fuzzed:
    request = invocation(r, bodies)
    request.kind = "mme"
    name = r.choice((*SERVED, *SERVED, *NAMES))
    if r.random() < 0.5:
        request.path = f"/models/{name}/invoke"
    else:
        request.path = "/invocations"
        request.headers.append((TARGET, name.encode()))
    return request


def _admin(r: random.Random, bodies: Bodies) -> Fuzzed:
    choice = r.randrange(5)
    if choice == 0:
        query = r.choice(("", "?max_results=1", "?max_results=0", "?max_results=x"))
        return Fuzzed("mme", method="GET", path="/models" + query, framing="none")
    if choice == 1:
        return Fuzzed("mme", method="GET", path=f"/models/{r.choice(NAMES)}", framing="none")
    if choice == 2:
        name = r.choice(SCRATCH)
        return Fuzzed("mme", method="DELETE", path=f"/models/{name}", framing="none")
    document = {"model_name": r.choice((*NAMES, *SCRATCH)), "url": r.choice(URLS)}
    if document["model_name"] not in SCRATCH:
        document["url"] = "nope"  # a served name is a 409; others never load
    body = json.dumps(document).encode()
    if document["url"] == "nope" and r.random() < 0.5:  # mutated, it still loads nothing
        body = mutate(r, body)
    return Fuzzed(
        "mme", path="/models", body=body, headers=[(b"Content-Type", b"application/json")]
    )
