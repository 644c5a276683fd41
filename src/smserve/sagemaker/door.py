"""The SageMaker hosting door as the server sees it: its routes, its envelope.

It is the default door (first in ``smserve.door_table``): its envelope answers what no other
door owns (an unrouted path, a request gunicorn or nginx cannot parse), and its headers name
the model and the caller's inference id in the access log. ``/ping`` is not counted in the
metrics (a health check every few seconds), but waits for the models: it is their readiness."""

from __future__ import annotations

from smserve.doors import DoorSpec, Mount, Route, Setup
from smserve.openapi import Fragment
from smserve.repository.mme import MultiModelRegistry
from smserve.sagemaker import openapi
from smserve.sagemaker.api import INFERENCE_ID_HEADER, TARGET_HEADER, SageMakerAPI
from smserve.sagemaker.envelope import ENVELOPE
from smserve.sagemaker.mme import MultiModelAPI


def open_door(setup: Setup) -> Mount:
    api = SageMakerAPI(setup.models, setup.settings)
    return Mount(api, _routes(api, setup))


def _routes(api: SageMakerAPI, setup: Setup) -> tuple[Route, ...]:
    routes = (
        Route(("GET",), "/ping", "ping", api.ping, counted=False),
        Route(("POST",), "/invocations", "invocations", api.invoke),
        Route(("POST",), "/endpoints/<name>/invocations", "endpoint_invocations", api.invoke),
        Route(("GET",), "/execution-parameters", "execution_parameters", api.execution_parameters),
    )
    if not isinstance(setup.models, MultiModelRegistry):
        return routes
    mme = MultiModelAPI(setup.models)
    return routes + (
        Route(("GET",), "/models", "list_models", mme.list_models),
        Route(("POST",), "/models", "load_model", mme.load_model),
        Route(("GET",), "/models/<model:name>", "describe_model", mme.describe_model),
        Route(("DELETE",), "/models/<model:name>", "unload_model", mme.unload_model),
        Route(("POST",), "/models/<path:name>/invoke", "invoke_model", mme.invoke_model),
    )


def fragment(setup: Setup) -> Fragment:
    """The door's routes in OpenAPI, with the media types the registry reads and writes."""
    registry = setup.registry
    return openapi.fragment(
        registry.decodable,
        registry.offers,
        multi_model=isinstance(setup.models, MultiModelRegistry),
        lines=setup.settings.batch_mode,
    )


DOOR = DoorSpec(
    name="sagemaker",
    envelope=ENVELOPE,
    open=open_door,
    openapi=fragment,
    model_header=TARGET_HEADER,
    request_id_header=INFERENCE_ID_HEADER,
    reserved_paths=("/invocations", "/models", "/endpoints", "/execution-parameters"),
    health_paths=("/ping",),  # behind nginx, the supervisor answers it (frontend/sidecar.py)
)
