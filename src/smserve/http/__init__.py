"""The HTTP layer: the one request path (``dispatch``: every door's routes answered from the
door table, every answer written by ``reply``), the app factory and the gunicorn server.

Only ``app`` imports Flask (the application object). Importing the package does nothing;
``app`` builds the WSGI app and ``server`` runs it under gunicorn."""
