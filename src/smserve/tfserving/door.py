"""TF Serving's REST door as the server sees it: every path under ``/v1/`` (matched
case-insensitively, as TF Serving does) handed to ``TFServingAPI``, errors as ``{"error"}``,
and TF Serving's metrics page (its names, summed over every worker: ``smserve.metrics``).

Its ``status_names`` are TF Serving's canonical codes for HTTP statuses: the metrics count
every door's API requests in TF Serving's names too, and take the codes from here."""

from __future__ import annotations

from smserve import metrics
from smserve.doors import (
    DoorReply,
    DoorRequest,
    DoorSpec,
    Envelope,
    Handler,
    Mount,
    Prefix,
    Route,
    Setup,
)
from smserve.media import TEXT
from smserve.openapi import Fragment, text_page
from smserve.tfserving import openapi
from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.routes import API_PREFIX
from smserve.tfserving.status import canonical_code

ENVELOPE = Envelope("plain", ("error",))
PAGE_ID = "tfserving_metrics"


def open_door(setup: Setup) -> Mount:
    api = TFServingAPI(setup.models, setup.settings.max_payload_bytes, setup.budget)
    page = Route(("GET",), metrics.PATH, "metrics", _page(setup), False, False)
    return Mount(api, (page,), Prefix(API_PREFIX, api.handle))


def _page(setup: Setup) -> Handler:
    def page(request: DoorRequest) -> DoorReply:
        """TF Serving's names, summed over every worker (see ``smserve.metrics``)."""
        return DoorReply(200, setup.metrics.render().encode(), TEXT)

    return page


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
    status_names=canonical_code,
    reserved_paths=("/v1/", "/monitoring/"),  # its API, and its metrics page's path
)
