"""The multi-model endpoint routes (SAGEMAKER_MULTI_MODEL=true):

* ``GET /models[?next_page_token=&max_results=]``: ``{"models": [{"modelName", "modelUrl"}],
  "nextPageToken"?}``, sorted by name; the token is the last name of the page;
* ``POST /models`` ``{"model_name", "url"}``: 200, 409 if registered, 507 over the budget;
* ``GET /models/<name>``: ``{"modelName", "modelUrl"}``; ``DELETE /models/<name>``;
* ``POST /models/<name>/invoke``: like ``/invocations`` for that model (as is
  ``/invocations`` with ``X-Amzn-SageMaker-Target-Model``).

Unknown names are 404 everywhere. The registry and how every worker stays in step with it
are described in ``smserve.repository.mme``.
"""

from __future__ import annotations

from typing import Any

import orjson

from smserve.doors import DoorReply, DoorRequest
from smserve.errors import InvalidInput, PayloadTooLarge
from smserve.repository.mme import MultiModelRegistry
from smserve.repository.mme_state import Entry
from smserve.sagemaker import envelope
from smserve.sagemaker.api import answer

# A registration names a model and a path: a few hundred bytes. Anything much larger is not
# one, and is refused before it is parsed.
MAX_LOAD_BODY_BYTES = 64 * 1024


class MultiModelAPI:
    """Answers the ``/models`` routes from the registry."""

    def __init__(self, registry: MultiModelRegistry) -> None:
        self.registry = registry

    def list_models(self, request: DoorRequest) -> DoorReply:
        limit = _max_results(request.query.get("max_results"))
        token = request.query.get("next_page_token") or ""
        entries = self.registry.entries()
        names = sorted(n for n in entries if n > token)
        page = names if limit is None else names[:limit]
        body: dict[str, Any] = {"models": [_describe(entries[n]) for n in page]}
        if len(page) < len(names):
            body["nextPageToken"] = page[-1]
        return envelope.json_reply(body)

    def load_model(self, request: DoorRequest) -> DoorReply:
        name, url = _load_request(request.body)
        entry = self.registry.load(name, url)
        return envelope.json_reply({"status": f'Model "{entry.name}" loaded', **_describe(entry)})

    def describe_model(self, request: DoorRequest) -> DoorReply:
        return envelope.json_reply(_describe(self.registry.entry(request.params["name"])))

    def unload_model(self, request: DoorRequest) -> DoorReply:
        name = request.params["name"]
        self.registry.unload(name)
        return envelope.json_reply({"status": f'Model "{name}" unregistered'})

    def invoke_model(self, request: DoorRequest) -> DoorReply:
        return answer(self.registry.model(request.params["name"]), request)


def _describe(entry: Entry) -> dict[str, str]:
    return {"modelName": entry.name, "modelUrl": entry.url}


def _max_results(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"max_results={text!r} must be a positive integer")
    return int(text)


def _load_request(body: bytes) -> tuple[str, str]:
    if len(body) > MAX_LOAD_BODY_BYTES:
        raise PayloadTooLarge(
            f"a model registration is at most {MAX_LOAD_BODY_BYTES} bytes of JSON: "
            '{"model_name": "...", "url": "..."}'
        )
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:  # nesting past its depth limit too: never a recursion
        raise InvalidInput('the body must be JSON: {"model_name": "...", "url": "..."}') from None
    if not isinstance(data, dict):
        raise InvalidInput('the body must be a JSON object: {"model_name": "...", "url": "..."}')
    name, url = data.get("model_name"), data.get("url")
    if not isinstance(name, str):
        raise InvalidInput('model_name must be a string: {"model_name": "...", "url": "..."}')
    if not isinstance(url, str) or not url:
        raise InvalidInput("url must be the path of the model's directory")
    return name, url
