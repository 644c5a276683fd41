"""TF Serving's REST door as the server sees it: every path under ``/v1/`` (matched
case-insensitively, as TF Serving does) handed to ``TFServingAPI``, errors as ``{"error"}``,
and TF Serving's metrics page (its names, summed over every worker: ``tfserving.metrics``).

Its ``metric_names`` are TF Serving's (``tfserving.metrics``): the metrics count every door's
API requests in them too, with TF Serving's canonical codes as statuses."""

from __future__ import annotations

from smserve.doors import DoorSpec, Envelope, Mount, Prefix, Route, Setup
from smserve.media import TEXT
from smserve.openapi import Fragment, text_page
from smserve.tfserving import metrics, openapi
from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.routes import API_PREFIX

ENVELOPE = Envelope("plain", ("error",))
PAGE_ID = "tfserving_metrics"


def open_door(setup: Setup) -> Mount:
    api = TFServingAPI(setup.models, setup.settings.max_payload_bytes, setup.budget)
    page = Route(("GET",), metrics.PATH, "metrics", metrics.page(setup), False, False)
    return Mount(api, (page,), Prefix(API_PREFIX, api.handle))


def fragment(setup: Setup) -> Fragment:
    """The door's routes, and its metrics page."""
    routes = openapi.fragment()
    page = text_page(PAGE_ID, "TF Serving's metrics (Prometheus text)", TEXT)
    return Fragment({**routes.paths, metrics.PATH: page}, routes.schemas)


DOOR = DoorSpec(
    name="tfserving",
    envelope=ENVELOPE,
    open=open_door,
    nginx_locations=("~* ^/v1/",),
    openapi=fragment,
    metric_names=metrics.NAMES,
    reserved_paths=("/v1/", "/monitoring/"),  # its API, and its metrics page's path
)
