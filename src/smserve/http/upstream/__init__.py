"""The worker's side of nginx's upstream connections: a gunicorn worker that reads the requests
nginx forwards and answers them on the thread that saw them arrive.

Behind nginx a worker only ever talks to nginx, over a unix socket in the run directory, and
nginx has already done the hard part of HTTP: it read each request whole (slow clients, chunked
bodies, header and body limits, timeouts), refused what is malformed in JSON, and forwards a
well-formed HTTP/1.1 request with a Content-Length. gunicorn's gthread worker, written for any
client, spends most of a small request's time on that generality (a pure-Python parser, a poller
thread handing each request to a pool thread and taking the connection back afterwards, a Date
header nginx drops). ``UpstreamWorker`` keeps gunicorn's process model (the master, boot,
heartbeat, signals, graceful stop) and replaces the request loop:

* ``wire``: the request head parsed in one pass into the WSGI environ, the answer's head built;
* ``body``: ``wsgi.input``, the Content-Length bytes read in one ``recv`` when they are not
  already in hand;
* ``exchange``: one request on one connection, through the WSGI app, answered in one ``send``;
* ``worker``: ``settings.threads`` threads share one epoll set in which every connection is armed
  for one event at a time, so the thread that wakes for a request serves it, with no handoff.

gunicorn alone (no nginx in front) keeps the gthread worker (``http.worker``): there the worker
faces clients directly.
"""
