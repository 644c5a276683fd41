"""Tests for smserve.algorithms (a package, so test module names may repeat elsewhere)."""
