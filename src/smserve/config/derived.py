"""Settings worked out from several variables, or checked beyond their type."""

from __future__ import annotations

from typing import Any

from smserve.config.constants import (
    DEFAULT_MAX_QUEUED,
    DEFAULT_METRICS_PATH,
    LOG_LEVEL_ALIASES,
    LOG_LEVELS,
    MIB,
    NUMERIC_LOG_LEVELS,
)
from smserve.config.reader import Reader
from smserve.errors import ConfigError
from smserve.resources import Resources


def max_payload_bytes(env: Reader) -> int:
    # The platform sets SAGEMAKER_MAX_PAYLOAD_IN_MB for Batch Transform, so it wins; the
    # XGBoost container's MAX_CONTENT_LENGTH (bytes) is honoured when it is absent.
    mib = env.optional_integer("SAGEMAKER_MAX_PAYLOAD_IN_MB", minimum=1)
    if mib is not None:
        return mib * MIB
    return env.integer("MAX_CONTENT_LENGTH", 6 * MIB, minimum=1)


def log_level(env: Reader) -> str:
    """SMSERVE_LOG_LEVEL (a name), else SAGEMAKER_CONTAINER_LOG_LEVEL (a number from 10 to 50
    as Python's logging reads it, or a name), else info."""
    ours = env.optional_choice("SMSERVE_LOG_LEVEL", LOG_LEVELS)
    if ours is not None:
        return ours
    name = "SAGEMAKER_CONTAINER_LOG_LEVEL"
    value = (env.text(name) or "info").lower()
    if value.isdigit():
        level = int(value)
        found = next((n for number, n in NUMERIC_LOG_LEVELS if level <= number), None)
        if level < 10 or found is None:
            raise ConfigError(f"{name}={value} must be a logging level from 10 to 50")
        return found
    value = LOG_LEVEL_ALIASES.get(value, value)
    if value not in LOG_LEVELS:
        raise ConfigError(f"{name}={value!r} must be 10 to 50 or one of: {', '.join(LOG_LEVELS)}")
    return value


def metrics_path(env: Reader) -> str:
    """What SageMaker's MetricsEndpointPath allows (letters, digits, / _ . -; no ``..``; at
    most 256 characters), without ``//`` (nginx merges slashes), not ``/``. The paths the
    server and its doors answer are refused where the table of doors is read
    (``door_table.check_settings``)."""
    name = "SMSERVE_METRICS_PATH"
    path = env.text(name) or DEFAULT_METRICS_PATH
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-")
    well_formed = path.startswith("/") and set(path) <= allowed and len(path) <= 256
    if not well_formed or ".." in path or "//" in path:
        raise ConfigError(
            f"{name}={path!r} must be an absolute path of letters, digits and / _ . - "
            "(no .. or //, at most 256 characters), such as /metrics"
        )
    if path == "/":
        raise ConfigError(f"{name}={path!r} is a path the server already answers (/)")
    return path


def sizing(env: Reader, resources: Resources) -> dict[str, Any]:
    """Workers, threads and memory budgets: each explicit setting, else its default from the
    container's ``resources``."""
    workers = env.integer("SAGEMAKER_MODEL_SERVER_WORKERS", resources.cpu_count, minimum=1)
    threads = env.integer("SMSERVE_THREADS", 1, minimum=1)
    request_mib = env.optional_integer("SMSERVE_REQUEST_MEMORY_MB", minimum=1)
    budget_mib = env.optional_integer("SMSERVE_MEMORY_BUDGET_MB", minimum=1)
    return {
        "workers": workers,
        "threads": threads,
        "cpu_count": resources.cpu_count,
        "memory_limit_bytes": resources.memory_bytes,
        "resources_note": resources.describe(),
        "request_memory_bytes": (
            resources.request_memory(workers, threads) if request_mib is None else request_mib * MIB
        ),
        "memory_budget_bytes": (
            resources.model_budget(workers) if budget_mib is None else budget_mib * MIB
        ),
    }


def inference_output(env: Reader) -> tuple[str, ...] | None:
    raw = env.text("SAGEMAKER_INFERENCE_OUTPUT")
    if raw is None:
        return None
    keys = tuple(k.strip().lower() for k in raw.split(",") if k.strip())
    if not keys:
        raise ConfigError("SAGEMAKER_INFERENCE_OUTPUT is set but names no output")
    return keys


def on_sagemaker(env: Reader) -> bool:
    """The platform sets SAGEMAKER_BIND_TO_PORT (hosting) or SAGEMAKER_BATCH (Batch Transform)."""
    return env.text("SAGEMAKER_BIND_TO_PORT") is not None or env.boolean("SAGEMAKER_BATCH", False)


def max_queued_requests(env: Reader) -> int:
    """SMSERVE_MAX_QUEUED_REQUESTS; off (0) by default on SageMaker, where the platform retries."""
    default = 0 if on_sagemaker(env) else DEFAULT_MAX_QUEUED
    return env.integer("SMSERVE_MAX_QUEUED_REQUESTS", default, minimum=0)
