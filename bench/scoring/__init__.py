"""Offline scoring (`smserve score`): local, Ray and Spark engines against the floor."""
