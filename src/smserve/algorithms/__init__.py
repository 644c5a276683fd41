"""Algorithms, one module per model kind behind the Algorithm protocol (``base``), listed in
one table (``catalog``) from which every list of algorithm names derives; ``loading`` loads a
model directory with the right one.

This package's ``__init__`` imports nothing: ``smserve.config`` reads the table's names, and
anything imported here would be imported with it, before the thread caps are set.
"""
