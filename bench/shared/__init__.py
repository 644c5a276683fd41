"""Shared plumbing of every benchmark: models, a real server, clients, peers' launchers."""
