"""smserve: a SageMaker-style inference container for k-means and XGBoost models."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
