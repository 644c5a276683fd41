"""The HTTP layer: the Flask app, its blueprints and error rendering, and the gunicorn server.

It is the only package that imports Flask. Importing it does nothing; ``app`` builds the WSGI
app and ``server`` runs it under gunicorn."""
