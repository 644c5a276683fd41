"""Settings: every environment variable the server reads, read once at startup from an
injected mapping and frozen. Nothing else in the package reads the environment.

``constants`` holds the names and defaults, ``reader`` the typed reads of one mapping,
``derived`` what is worked out from several variables, ``training`` the settings of ``train``,
``declared`` the settings a door declares of its own (read into ``Settings.declared``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from smserve.config import declared as declaring
from smserve.config import derived
from smserve.config.constants import (
    BATCH_STRATEGIES,
    DEFAULT_MAX_MODEL_UNPACKED_MB,
    DEFAULT_MAX_QUEUED,
    DEFAULT_METRICS_PATH,
    DEFAULT_MODEL_DIR,
    DEFAULT_MODELS_DIR,
    DEFAULT_REQUEST_MEMORY_RATIO,
    DEFAULT_TRAINING_BASE_DIR,
    FAST_PREDICTOR_MODES,
    FRONTENDS,
    KMEANS_DISTANCES,
    LIBSVM_INDEX_BASES,
    LOG_LEVEL_ALIASES,
    LOG_LEVELS,
    MIB,
    NUMERIC_LOG_LEVELS,
    SERVER_PREFIX,
    XGBOOST_DEVICES,
)
from smserve.config.declared import Declared
from smserve.config.reader import Reader
from smserve.config.training import TrainingSettings
from smserve.resources import Resources, detect

__all__ = [
    "MIB",
    "KMEANS_DISTANCES",
    "XGBOOST_DEVICES",
    "FAST_PREDICTOR_MODES",
    "LIBSVM_INDEX_BASES",
    "BATCH_STRATEGIES",
    "DEFAULT_MODEL_DIR",
    "DEFAULT_MODELS_DIR",
    "DEFAULT_TRAINING_BASE_DIR",
    "DEFAULT_MAX_MODEL_UNPACKED_MB",
    "DEFAULT_REQUEST_MEMORY_RATIO",
    "LOG_LEVELS",
    "NUMERIC_LOG_LEVELS",
    "LOG_LEVEL_ALIASES",
    "FRONTENDS",
    "DEFAULT_METRICS_PATH",
    "SERVER_PREFIX",
    "DEFAULT_MAX_QUEUED",
    "Declared",
    "Reader",
    "Settings",
    "TrainingSettings",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Settings:
    """Process-wide settings. Field comments name the environment variable each comes from."""

    model_dir: Path = DEFAULT_MODEL_DIR  # SM_MODEL_DIR
    port: int = 8080  # SAGEMAKER_BIND_TO_PORT
    bind_host: str = "0.0.0.0"  # SMSERVE_BIND_HOST: the address HTTP and gRPC listen on
    workers: int = 1  # SAGEMAKER_MODEL_SERVER_WORKERS (default: cpu_count)
    # What the container may use (``smserve.resources``: its cgroup limits, else the affinity
    # mask and physical memory); worker, thread and memory defaults follow from them.
    cpu_count: int = os.cpu_count() or 1  # from_env: detected; constructed directly: the host's
    memory_limit_bytes: int = 4096 * MIB
    resources_note: str = ""  # how they were found, for the log
    # SMSERVE_REQUEST_MEMORY_MB: what one request may make a worker allocate (default: half of
    # memory_limit_bytes shared among every request thread of every worker)
    request_memory_bytes: int = 512 * MIB
    # SMSERVE_REQUEST_MEMORY_RATIO: bytes a request may decode to per byte of its body
    request_memory_ratio: int = DEFAULT_REQUEST_MEMORY_RATIO
    threads: int = 1  # SMSERVE_THREADS: request threads per worker
    timeout_s: int = 60  # SAGEMAKER_MODEL_SERVER_TIMEOUT
    keep_alive_s: int = 75  # SMSERVE_KEEP_ALIVE_S: idle keep-alive connections are kept this long
    graceful_timeout_s: int = 25  # SMSERVE_GRACEFUL_TIMEOUT_S: SIGTERM drain (kill at 30 s)
    frontend: str = "auto"  # SMSERVE_FRONTEND: auto (nginx when installed) | nginx | gunicorn
    client_header_timeout_s: int = 10  # SMSERVE_CLIENT_HEADER_TIMEOUT_S: whole headers by then
    client_body_timeout_s: int = 10  # SMSERVE_CLIENT_BODY_TIMEOUT_S: longest stall in a body
    max_connections: int = 4096  # SMSERVE_MAX_CONNECTIONS: open client connections (nginx)
    keepalive_requests: int = 10000  # SMSERVE_KEEPALIVE_REQUESTS: requests per connection
    # SMSERVE_MAX_QUEUED_REQUESTS: inference requests (POSTs) allowed to wait beyond one per
    # request thread; past that nginx answers 503 with Retry-After at once (0: no bound;
    # the default on SageMaker, where the platform retries)
    max_queued_requests: int = DEFAULT_MAX_QUEUED
    log_level: str = "info"  # SMSERVE_LOG_LEVEL, else SAGEMAKER_CONTAINER_LOG_LEVEL
    # SMSERVE_METRICS_PATH: the Prometheus page on the serving port (SageMaker's scrape)
    metrics_path: str = DEFAULT_METRICS_PATH
    nginx: Path | None = None  # SMSERVE_NGINX: the nginx executable (None: found on PATH)
    # SMSERVE_REQUEST_BUFFER_KB: body bytes nginx holds in memory per request (for as long as
    # the request lasts, a slowly read answer included); a larger body waits in a temp file
    request_buffer_bytes: int = 1024 * 1024
    # SMSERVE_RESPONSE_BUFFER_KB: answer bytes nginx holds in memory per connection; the rest
    # of an answer a client reads slowly waits in a temp file of at most
    # SMSERVE_RESPONSE_SPILL_MB (0: none; the worker then waits for the client)
    response_buffer_bytes: int = 512 * 1024
    response_spill_bytes: int = 1024 * MIB
    default_accept: str | None = None  # SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT (None: algorithm's)
    max_payload_bytes: int = 6 * MIB  # SAGEMAKER_MAX_PAYLOAD_IN_MB (MiB) or MAX_CONTENT_LENGTH
    batch_mode: bool = False  # SAGEMAKER_BATCH
    batch_strategy: str = "MULTI_RECORD"  # SAGEMAKER_BATCH_STRATEGY
    max_concurrent_transforms: int | None = None  # SAGEMAKER_MAX_CONCURRENT_TRANSFORMS
    algorithm: str | None = None  # SMSERVE_ALGORITHM (None: detect from model_dir)
    kmeans_distance: str = "euclidean"  # SMSERVE_KMEANS_DISTANCE: euclidean | squared
    inference_output: tuple[str, ...] | None = None  # SAGEMAKER_INFERENCE_OUTPUT
    ensemble: bool = True  # SAGEMAKER_INFERENCE_ENSEMBLE
    allow_pickle: bool = False  # SMSERVE_ALLOW_PICKLE: opt in to unpickling model files
    # SMSERVE_MAX_MODEL_UNPACKED_MB: a model.tar.gz that unpacks to more is refused unwritten
    max_model_unpacked_bytes: int = DEFAULT_MAX_MODEL_UNPACKED_MB * MIB
    xgboost_device: str = "auto"  # SMSERVE_XGBOOST_DEVICE: auto | cpu | cuda
    fast_predictor: str = "auto"  # SMSERVE_FAST_PREDICTOR: auto | off (XGBoost on cpu)
    libsvm_index_base: str = "0"  # SMSERVE_LIBSVM_INDEX_BASE: 0 | 1 | auto
    allow_one_fewer_feature: bool = False  # SMSERVE_ALLOW_ONE_FEWER_FEATURE
    multi_model: bool = False  # SAGEMAKER_MULTI_MODEL
    models_dir: Path = DEFAULT_MODELS_DIR  # SMSERVE_MODELS_DIR (multi-model endpoints)
    model_name: str | None = None  # MODEL_NAME (TF Serving style repository)
    model_base_path: Path | None = None  # MODEL_BASE_PATH (TF Serving style repository)
    model_config_file: Path | None = None  # SMSERVE_MODEL_CONFIG_FILE (TF Serving text format)
    poll_interval_s: float = 1.0  # SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS (0 disables polling)
    # SMSERVE_MEMORY_BUDGET_MB: models one worker may hold on a multi-model endpoint (from_env's
    # default: what memory_limit_bytes leaves after the processes and the requests; None: off)
    memory_budget_bytes: int | None = None
    runtime_dir: Path | None = None  # SMSERVE_RUNTIME_DIR: parent of the state workers share
    cache_dir: Path | None = None  # SMSERVE_CACHE_DIR (None: ~/.cache/smserve); demo models
    # AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL: an S3-compatible service for s3:// inputs
    # and outputs of ``smserve score`` (None: AWS itself; credentials are the AWS SDK's own)
    s3_endpoint_url: str | None = None
    # The doors' own settings (``DoorSpec.settings``, ``config.declared``), by variable, as
    # ``door_table.read_settings`` read them; one not read here has its default.
    declared: declaring.Values = ()

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, resources: Resources | None = None
    ) -> Settings:
        """Build settings from ``environ`` (the process environment when None) and the
        container's ``resources`` (detected when None).

        Raises ConfigError naming the variable when a value is invalid.
        """
        env = Reader(os.environ if environ is None else environ)
        resources = resources or detect()
        sizing = derived.sizing(env, resources)
        return cls(
            **sizing,
            model_dir=env.path("SM_MODEL_DIR", DEFAULT_MODEL_DIR),
            port=env.integer("SAGEMAKER_BIND_TO_PORT", 8080, minimum=1),
            bind_host=env.text("SMSERVE_BIND_HOST") or "0.0.0.0",
            timeout_s=env.integer("SAGEMAKER_MODEL_SERVER_TIMEOUT", 60, minimum=1),
            keep_alive_s=env.integer("SMSERVE_KEEP_ALIVE_S", 75, minimum=0),
            graceful_timeout_s=env.integer("SMSERVE_GRACEFUL_TIMEOUT_S", 25, minimum=0),
            frontend=env.choice("SMSERVE_FRONTEND", "auto", FRONTENDS),
            client_header_timeout_s=env.integer("SMSERVE_CLIENT_HEADER_TIMEOUT_S", 10, minimum=1),
            client_body_timeout_s=env.integer("SMSERVE_CLIENT_BODY_TIMEOUT_S", 10, minimum=1),
            max_connections=env.integer("SMSERVE_MAX_CONNECTIONS", 4096, minimum=16),
            keepalive_requests=env.integer("SMSERVE_KEEPALIVE_REQUESTS", 10000, minimum=1),
            max_queued_requests=derived.max_queued_requests(env),
            log_level=derived.log_level(env),
            metrics_path=derived.metrics_path(env),
            nginx=env.optional_path("SMSERVE_NGINX"),
            request_buffer_bytes=env.integer("SMSERVE_REQUEST_BUFFER_KB", 1024, minimum=8) * 1024,
            response_buffer_bytes=env.integer("SMSERVE_RESPONSE_BUFFER_KB", 512, minimum=256)
            * 1024,
            response_spill_bytes=env.integer("SMSERVE_RESPONSE_SPILL_MB", 1024) * MIB,
            default_accept=env.text("SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"),
            max_payload_bytes=derived.max_payload_bytes(env),
            request_memory_ratio=env.integer(
                "SMSERVE_REQUEST_MEMORY_RATIO", DEFAULT_REQUEST_MEMORY_RATIO, minimum=1
            ),
            batch_mode=env.boolean("SAGEMAKER_BATCH", False),
            batch_strategy=env.choice("SAGEMAKER_BATCH_STRATEGY", "MULTI_RECORD", BATCH_STRATEGIES),
            max_concurrent_transforms=env.optional_integer("SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"),
            algorithm=env.lowered("SMSERVE_ALGORITHM"),
            kmeans_distance=env.choice("SMSERVE_KMEANS_DISTANCE", "euclidean", KMEANS_DISTANCES),
            inference_output=derived.inference_output(env),
            ensemble=env.boolean("SAGEMAKER_INFERENCE_ENSEMBLE", True),
            allow_pickle=env.boolean("SMSERVE_ALLOW_PICKLE", False),
            max_model_unpacked_bytes=env.integer(
                "SMSERVE_MAX_MODEL_UNPACKED_MB", DEFAULT_MAX_MODEL_UNPACKED_MB, minimum=1
            )
            * MIB,
            xgboost_device=env.choice("SMSERVE_XGBOOST_DEVICE", "auto", XGBOOST_DEVICES),
            fast_predictor=env.choice("SMSERVE_FAST_PREDICTOR", "auto", FAST_PREDICTOR_MODES),
            libsvm_index_base=env.choice("SMSERVE_LIBSVM_INDEX_BASE", "0", LIBSVM_INDEX_BASES),
            allow_one_fewer_feature=env.boolean("SMSERVE_ALLOW_ONE_FEWER_FEATURE", False),
            multi_model=env.boolean("SAGEMAKER_MULTI_MODEL", False),
            models_dir=env.path("SMSERVE_MODELS_DIR", DEFAULT_MODELS_DIR),
            model_name=env.text("MODEL_NAME"),
            model_base_path=env.optional_path("MODEL_BASE_PATH"),
            model_config_file=env.optional_path("SMSERVE_MODEL_CONFIG_FILE"),
            poll_interval_s=env.number("SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS", 1.0, minimum=0.0),
            runtime_dir=env.optional_path("SMSERVE_RUNTIME_DIR"),
            cache_dir=env.optional_path("SMSERVE_CACHE_DIR"),
            s3_endpoint_url=env.text("AWS_ENDPOINT_URL_S3") or env.text("AWS_ENDPOINT_URL"),
        )

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied (``dataclasses.replace`` with field-name checking)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return Settings(**{**values, **changes})

    def read_declared(
        self, environ: Mapping[str, str], settings: Sequence[Declared[Any]]
    ) -> Settings:
        """A copy holding ``settings`` (declared outside config) read from ``environ``."""
        return self.replace(declared=declaring.read(environ, settings))

    def with_value(self, setting: Declared[T], value: T) -> Settings:
        """A copy in which the declared ``setting`` is ``value``."""
        return self.replace(declared=declaring.replaced(self.declared, setting, value))

    @property
    def max_payload_mib(self) -> int:
        return self.max_payload_bytes // MIB
