"""The queue bound (``SMSERVE_MAX_QUEUED_REQUESTS``) as nginx directives.

``limit_conn`` counts the POSTs in progress: GETs such as ``/ping`` and the metrics page have an
empty key, so they are never counted or refused. Past one POST per request thread plus the
bound, nginx answers 503 with ``Retry-After`` at once (``error_pages``), instead of queueing the
request behind the others where its latency would grow without limit."""

from __future__ import annotations

from smserve.config import Settings

ZONE = "smserve_queue"


def queue_limit(settings: Settings) -> int:
    """POSTs in progress at most: one per request thread, plus the queue bound (0: none)."""
    if not settings.max_queued_requests:
        return 0
    return settings.workers * settings.threads + settings.max_queued_requests


def zone_lines(settings: Settings) -> list[str]:
    """The http context's part: the key (POSTs only) and the shared counter."""
    if not queue_limit(settings):
        return []
    return [
        "map $request_method $smserve_queue_key { POST queue; default ''; }",
        f"limit_conn_zone $smserve_queue_key zone={ZONE}:1m;",
    ]


def limit_lines(settings: Settings) -> list[str]:
    """The server context's part: the limit, answered 503."""
    limit = queue_limit(settings)
    return [f"limit_conn {ZONE} {limit};", "limit_conn_status 503;"] if limit else []
