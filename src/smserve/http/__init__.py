"""The HTTP layer: the Flask app, the one adapter that mounts every door, the fast path, the
answers Flask gives itself, and the gunicorn server.

It is the only package that imports Flask. Importing it does nothing; ``app`` builds the WSGI
app (every door and its routes are listed there) and ``server`` runs it under gunicorn."""
