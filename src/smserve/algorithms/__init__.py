"""Algorithms, one module per model kind, selected through an explicit table."""

from __future__ import annotations

from smserve.algorithms.base import Algorithm

__all__ = ["Algorithm"]
