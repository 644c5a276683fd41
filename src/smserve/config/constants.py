"""The names and defaults the settings choose among (``smserve.config``)."""

from __future__ import annotations

from pathlib import Path

MIB = 1024 * 1024

KMEANS_DISTANCES = ("euclidean", "squared")
XGBOOST_DEVICES = ("auto", "cpu", "cuda")
FAST_PREDICTOR_MODES = ("auto", "off")
LIBSVM_INDEX_BASES = ("0", "1", "auto")
BATCH_STRATEGIES = ("MULTI_RECORD", "SINGLE_RECORD")
# Named here because ``cls.model_dir`` on a slots dataclass is a member descriptor, not the default.
DEFAULT_MODEL_DIR = Path("/opt/ml/model")
DEFAULT_MODELS_DIR = Path("/opt/ml/models")
DEFAULT_TRAINING_BASE_DIR = Path("/opt/ml")
DEFAULT_MAX_MODEL_UNPACKED_MB = 2048  # generous for XGBoost and k-means; refuses archive bombs
# Bytes a request may decode to per byte of its body (``smserve.budget``): JSON's parsed objects
# take up to about 24 per byte; columnar bodies that compress better than this need it raised.
DEFAULT_REQUEST_MEMORY_RATIO = 64
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
# Python's numeric levels, as SAGEMAKER_CONTAINER_LOG_LEVEL gives them (the SDK's
# ``container_log_level``): a number between two names means the higher one, as in logging.
NUMERIC_LOG_LEVELS = ((10, "debug"), (20, "info"), (30, "warning"), (40, "error"), (50, "critical"))
LOG_LEVEL_ALIASES = {"warn": "warning", "fatal": "critical"}
FRONTENDS = ("auto", "nginx", "gunicorn")
DEFAULT_METRICS_PATH = "/metrics"  # where SageMaker scrapes unless ContainerMetricsConfig says
# The prefix of the paths nginx and the supervisor answer themselves (error pages, the probe);
# ``door_table.reserved_paths`` joins it to every door's (no setting may take one).
SERVER_PREFIX = "/_smserve/"


DEFAULT_MAX_QUEUED = 128  # requests waiting for a thread, off SageMaker: ~0.1 s of 1-row work
