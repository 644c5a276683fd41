"""Real tiny models in a real repository (a TF Serving layout: ``km`` version 1, ``xgb``
versions 1 (binary:logistic) and 2 (multi:softprob)), the V2 API over it, and the schema
every response is validated against (tests/data/v2, written from the protocol's spec)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from smserve.config import Settings
from smserve.doors import DoorReply, DoorRequest
from smserve.repository.modes import Models, open_models
from smserve.v2.api import V2API

SCHEMA_PATH = Path(__file__).parents[1] / "data" / "v2" / "open_inference_rest.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())
_REGISTRY = Registry().with_resource(SCHEMA["$id"], Resource.from_contents(SCHEMA))
INFER_KM = "/v2/models/km/infer"
INFER_XGB = "/v2/models/xgb/infer"


def validate(document: Any, definition: str) -> None:
    """Raise jsonschema.ValidationError unless ``document`` is a valid ``definition``."""
    schema = {"$ref": f"{SCHEMA['$id']}#/$defs/{definition}"}
    Draft202012Validator(schema, registry=_REGISTRY).validate(document)


class Headers:
    """Case-insensitive request headers, as the HTTP adapter passes them."""

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = {key.lower(): value for key, value in items.items()}

    def get(self, key: str, /) -> str | None:
        return self._items.get(key.lower())


@dataclass(frozen=True)
class Answer:
    reply: DoorReply

    @property
    def status(self) -> int:
        return self.reply.status

    def json(self, definition: str | None = None) -> Any:
        """The body (the JSON header of a binary body), validated against ``definition``,
        or against the error envelope for a non-200 answer."""
        body = self.reply.body[: self.header_length] if self.header_length else self.reply.body
        document = orjson.loads(body)
        validate(document, definition if self.status == 200 else "error_response")
        return document

    @property
    def header_length(self) -> int | None:
        value = dict(self.reply.headers).get("Inference-Header-Content-Length")
        return None if value is None else int(value)

    @property
    def error(self) -> str:
        assert self.status != 200, self.reply.body
        message: str = self.json()["error"]
        return message


Call = Callable[..., Answer]


def _layout(root: Path, kmeans: Path, binary: Path, multiclass: Path) -> Path:
    for name, version, source in (("km", 1, kmeans), ("xgb", 1, binary), ("xgb", 2, multiclass)):
        shutil.copytree(source, root / name / str(version))
    config = root / "models.config"
    config.write_text(
        "model_config_list {\n"
        f"  config {{ name: 'km' base_path: '{root / 'km'}' model_platform: 'kmeans' }}\n"
        f"  config {{ name: 'xgb' base_path: '{root / 'xgb'}' model_platform: 'xgboost'\n"
        "           model_version_policy { all {} } }\n"
        "}\n"
    )
    return config


@pytest.fixture
def models(
    tmp_path: Path, kmeans_model_dir: Path, xgb_binary_dir: Path, xgb_multiclass_dir: Path
) -> Models:
    config = _layout(tmp_path / "models", kmeans_model_dir, xgb_binary_dir, xgb_multiclass_dir)
    return open_models(Settings(model_config_file=config, poll_interval_s=0))


@pytest.fixture
def api(models: Models) -> V2API:
    return V2API(models)


@pytest.fixture
def call(api: V2API) -> Call:
    def call(
        method: str, path: str, body: bytes | Any = b"", headers: Mapping[str, str] | None = None
    ) -> Answer:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        return Answer(api.handle(DoorRequest(method, path, Headers(headers or {}), data)))

    return call
