"""SageMaker multi-model endpoint routes (SAGEMAKER_MULTI_MODEL=true).

* ``GET /models[?next_page_token=&max_results=]``: ``{"models": [{"modelName", "modelUrl"}],
  "nextPageToken"?}``, sorted by name; the token is the last name of the page;
* ``POST /models`` ``{"model_name", "url"}``: 200, 409 if registered, 507 over the budget;
* ``GET /models/<name>``: ``{"modelName", "modelUrl"}``; ``DELETE /models/<name>``;
* ``POST /models/<name>/invoke``: like ``/invocations`` for that model (as does
  ``/invocations`` with ``X-Amzn-SageMaker-Target-Model``, see ``http.models``).

Unknown names are 404 everywhere. The registry and how every worker stays in step with it
are described in ``smserve.repository.mme``.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from flask import Blueprint, Response, current_app, g, request

from smserve.errors import InvalidInput
from smserve.http.context import read_body
from smserve.http.sagemaker import CUSTOM_ATTRIBUTES_HEADER, reply_response
from smserve.media import JSON
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.mme_state import Entry

REGISTRY_KEY = "smserve.mme"

blueprint = Blueprint("mme", __name__)


def current_registry() -> MultiModelRegistry:
    registry: MultiModelRegistry = current_app.extensions[REGISTRY_KEY]
    return registry


def _json(value: Any, status: int = HTTPStatus.OK) -> Response:
    return Response(json.dumps(value).encode(), status=status, content_type=JSON)


def _describe(entry: Entry) -> dict[str, str]:
    return {"modelName": entry.name, "modelUrl": entry.url}


@blueprint.get("/models")
def list_models() -> Response:
    limit = _max_results(request.args.get("max_results"))
    token = request.args.get("next_page_token") or ""
    entries = current_registry().entries()
    names = sorted(n for n in entries if n > token)
    page = names if limit is None else names[:limit]
    body: dict[str, Any] = {"models": [_describe(entries[n]) for n in page]}
    if len(page) < len(names):
        body["nextPageToken"] = page[-1]
    return _json(body)


def _max_results(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"max_results={text!r} must be a positive integer")
    return int(text)


@blueprint.post("/models")
def load_model() -> Response:
    name, url = _load_request(read_body())
    entry = current_registry().load(name, url)
    return _json({"status": f'Model "{entry.name}" loaded', **_describe(entry)})


def _load_request(body: bytes) -> tuple[str, str]:
    try:
        data = json.loads(body)
    except ValueError:
        raise InvalidInput('the body must be JSON: {"model_name": "...", "url": "..."}') from None
    if not isinstance(data, dict):
        raise InvalidInput('the body must be a JSON object: {"model_name": "...", "url": "..."}')
    name, url = data.get("model_name"), data.get("url")
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise InvalidInput("model_name must be a non-empty string of printable characters")
    if not isinstance(url, str) or not url:
        raise InvalidInput("url must be the path of the model's directory")
    return name, url


@blueprint.get("/models/<path:name>")
def describe_model(name: str) -> Response:
    return _json(_describe(current_registry().entry(name)))


@blueprint.delete("/models/<path:name>")
def unload_model(name: str) -> Response:
    current_registry().unload(name)
    return _json({"status": f'Model "{name}" unregistered'})


@blueprint.post("/models/<path:name>/invoke")
def invoke_model(name: str) -> Response:
    served = current_registry().model(name)
    g.smserve_served = served
    headers = request.headers
    reply = served.service.invoke(
        read_body(),
        request.content_type,
        headers.get("Accept"),
        headers.get(CUSTOM_ATTRIBUTES_HEADER),
    )
    return reply_response(reply)
