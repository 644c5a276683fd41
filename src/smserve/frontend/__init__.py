"""The front end: nginx in front of gunicorn, or gunicorn alone.

gunicorn's workers read each request on the worker itself, so a client that sends slowly (or
stalls mid-headers or mid-body) holds a worker for as long as it likes: two such sockets froze
a two-worker server. nginx reads whole requests with an event loop, times out slow clients
(408, or a closed connection for stalled headers), enforces the payload limit (413) and only
then hands a complete request to gunicorn over a unix socket with upstream keep-alive. This is
how AWS's own SageMaker containers run, and what gunicorn's deployment guide asks for.

* ``nginx``: the configuration, rendered from Settings (timeouts, limits, JSON error pages);
* ``supervisor``: runs nginx and the gunicorn master side by side, exits non-zero when either
  dies, and drains both on SIGTERM.

``choose`` picks the mode: SMSERVE_FRONTEND=nginx|gunicorn forces one; ``auto`` (the default)
uses nginx when it is installed and says in the log when it is not."""

from __future__ import annotations

import logging

from smserve.config import Settings
from smserve.errors import ConfigError

logger = logging.getLogger(__name__)

NGINX = "nginx"
GUNICORN = "gunicorn"


def choose(settings: Settings, nginx: str | None) -> str:
    """``"nginx"`` or ``"gunicorn"``, given the nginx executable found (None: not installed);
    raises ConfigError when nginx is forced but missing."""
    if settings.frontend == GUNICORN:
        return GUNICORN
    if nginx is not None:
        return NGINX
    if settings.frontend == NGINX:
        raise ConfigError("SMSERVE_FRONTEND=nginx, but no nginx executable was found on PATH")
    logger.warning(
        "nginx is not installed: serving with gunicorn alone, so slow or stalled clients can "
        "occupy its workers; install nginx (apt-get install nginx-light) or set "
        "SMSERVE_FRONTEND=gunicorn to silence this warning"
    )
    return GUNICORN
