"""Settings: every environment variable the server reads, read once at startup from an
injected mapping and frozen. Nothing else in the package reads the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from smserve.errors import ConfigError
from smserve.resources import Resources, detect

MIB = 1024 * 1024
T = TypeVar("T")

ALGORITHMS = ("kmeans", "xgboost")
KMEANS_DISTANCES = ("euclidean", "squared")
XGBOOST_DEVICES = ("auto", "cpu", "cuda")
FAST_PREDICTOR_MODES = ("auto", "off")
LIBSVM_INDEX_BASES = ("0", "1", "auto")
BATCH_STRATEGIES = ("MULTI_RECORD", "SINGLE_RECORD")
# Named here because ``cls.model_dir`` on a slots dataclass is a member descriptor, not the default.
DEFAULT_MODEL_DIR = Path("/opt/ml/model")
DEFAULT_MODELS_DIR = Path("/opt/ml/models")
DEFAULT_TRAINING_BASE_DIR = Path("/opt/ml")
DEFAULT_GRPC_PORT = 8081  # MLServer's and KServe's gRPC port
DEFAULT_MAX_QUEUED = 128  # requests waiting for a thread, off SageMaker: ~0.1 s of 1-row work
DEFAULT_MAX_MODEL_UNPACKED_MB = 2048  # generous for XGBoost and k-means; refuses archive bombs
LOG_LEVELS = ("debug", "info", "warning", "error")
FRONTENDS = ("auto", "nginx", "gunicorn")


@dataclass(frozen=True, slots=True)
class Settings:
    """Process-wide settings. Field comments name the environment variable each comes from."""

    model_dir: Path = DEFAULT_MODEL_DIR  # SM_MODEL_DIR
    port: int = 8080  # SAGEMAKER_BIND_TO_PORT
    bind_host: str = "0.0.0.0"  # SMSERVE_BIND_HOST: the address HTTP and gRPC listen on
    # SMSERVE_GRPC_PORT: V2 over gRPC (0: off; off by default when SAGEMAKER_BIND_TO_PORT is
    grpc_port: int = DEFAULT_GRPC_PORT  # set: SageMaker's pipelines may give 8081 to another)
    workers: int = 1  # SAGEMAKER_MODEL_SERVER_WORKERS (default: cpu_count)
    # What the container may use (``smserve.resources``: its cgroup limits, else the affinity
    # mask and physical memory); worker, thread and memory defaults follow from them.
    cpu_count: int = os.cpu_count() or 1  # from_env: detected; constructed directly: the host's
    memory_limit_bytes: int = 4096 * MIB
    resources_note: str = ""  # how they were found, for the log
    # SMSERVE_REQUEST_MEMORY_MB: what one request may make a worker allocate (default: half of
    # memory_limit_bytes shared among every request thread of every worker)
    request_memory_bytes: int = 512 * MIB
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
    # request thread; past that nginx answers 503 with Retry-After at once (0: no bound; the
    # default; on SageMaker from_env's default is 0: the platform retries)
    max_queued_requests: int = DEFAULT_MAX_QUEUED
    log_level: str = "info"  # SMSERVE_LOG_LEVEL
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

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, resources: Resources | None = None
    ) -> Settings:
        """Build settings from ``environ`` (the process environment when None) and the
        container's ``resources`` (detected when None).

        Raises ConfigError naming the variable when a value is invalid.
        """
        env = _Reader(os.environ if environ is None else environ)
        resources = resources or detect()
        sizing = _sizing(env, resources)
        return cls(
            **sizing,
            model_dir=env.path("SM_MODEL_DIR", DEFAULT_MODEL_DIR),
            port=env.integer("SAGEMAKER_BIND_TO_PORT", 8080, minimum=1),
            bind_host=env.text("SMSERVE_BIND_HOST") or "0.0.0.0",
            grpc_port=_grpc_port(env),
            timeout_s=env.integer("SAGEMAKER_MODEL_SERVER_TIMEOUT", 60, minimum=1),
            keep_alive_s=env.integer("SMSERVE_KEEP_ALIVE_S", 75, minimum=0),
            graceful_timeout_s=env.integer("SMSERVE_GRACEFUL_TIMEOUT_S", 25, minimum=0),
            frontend=env.choice("SMSERVE_FRONTEND", "auto", FRONTENDS),
            client_header_timeout_s=env.integer("SMSERVE_CLIENT_HEADER_TIMEOUT_S", 10, minimum=1),
            client_body_timeout_s=env.integer("SMSERVE_CLIENT_BODY_TIMEOUT_S", 10, minimum=1),
            max_connections=env.integer("SMSERVE_MAX_CONNECTIONS", 4096, minimum=16),
            keepalive_requests=env.integer("SMSERVE_KEEPALIVE_REQUESTS", 10000, minimum=1),
            max_queued_requests=_max_queued_requests(env),
            log_level=env.choice(
                "SMSERVE_LOG_LEVEL", "info", ("debug", "info", "warning", "error")
            ),
            default_accept=env.text("SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"),
            max_payload_bytes=_max_payload_bytes(env),
            batch_mode=env.boolean("SAGEMAKER_BATCH", False),
            batch_strategy=env.choice("SAGEMAKER_BATCH_STRATEGY", "MULTI_RECORD", BATCH_STRATEGIES),
            max_concurrent_transforms=env.optional_integer("SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"),
            algorithm=env.optional_choice("SMSERVE_ALGORITHM", ALGORITHMS),
            kmeans_distance=env.choice("SMSERVE_KMEANS_DISTANCE", "euclidean", KMEANS_DISTANCES),
            inference_output=_inference_output(env),
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

    @property
    def max_payload_mib(self) -> int:
        return self.max_payload_bytes // MIB


@dataclass(frozen=True, slots=True)
class TrainingSettings:
    """Settings of ``smserve train``: the SageMaker training layout under ``base_dir`` (each
    path overridable) and the training options. Field comments name the variables."""

    config_dir: Path  # SM_INPUT_CONFIG_DIR (default: <base>/input/config)
    data_dir: Path  # <base>/input/data, base from SMSERVE_TRAINING_BASE_DIR (default /opt/ml)
    model_dir: Path  # SM_MODEL_DIR (default: <base>/model)
    output_dir: Path  # SM_OUTPUT_DIR (default: <base>/output); holds ``failure``
    channel_dirs: Mapping[str, Path]  # SM_CHANNEL_<NAME> (default: <data_dir>/<name>)
    algorithm: str | None = None  # SMSERVE_ALGORITHM (None: hyperparameter or xgboost)
    libsvm_index_base: str = "0"  # SMSERVE_LIBSVM_INDEX_BASE, as when serving
    log_level: str = "info"  # SMSERVE_LOG_LEVEL

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TrainingSettings:
        """Raises ConfigError naming the variable when a value is invalid."""
        env = _Reader(os.environ if environ is None else environ)
        paths = cls.layout(env)
        return cls(
            **paths,
            algorithm=env.optional_choice("SMSERVE_ALGORITHM", ALGORITHMS),
            libsvm_index_base=env.choice("SMSERVE_LIBSVM_INDEX_BASE", "0", LIBSVM_INDEX_BASES),
            log_level=env.choice("SMSERVE_LOG_LEVEL", "info", LOG_LEVELS),
        )

    @staticmethod
    def output_dir_of(environ: Mapping[str, str]) -> Path:
        """Where ``failure`` goes, even when other settings are invalid."""
        output_dir: Path = TrainingSettings.layout(_Reader(environ))["output_dir"]
        return output_dir

    @staticmethod
    def layout(env: _Reader) -> dict[str, Any]:
        base = env.path("SMSERVE_TRAINING_BASE_DIR", DEFAULT_TRAINING_BASE_DIR)
        return {
            "config_dir": env.path("SM_INPUT_CONFIG_DIR", base / "input" / "config"),
            "data_dir": base / "input" / "data",
            "model_dir": env.path("SM_MODEL_DIR", base / "model"),
            "output_dir": env.path("SM_OUTPUT_DIR", base / "output"),
            "channel_dirs": env.prefixed_paths("SM_CHANNEL_"),
        }


def _grpc_port(env: _Reader) -> int:
    default = 0 if env.text("SAGEMAKER_BIND_TO_PORT") else DEFAULT_GRPC_PORT
    port = env.integer("SMSERVE_GRPC_PORT", default, minimum=0)
    if port > 65535 or (port and port == env.integer("SAGEMAKER_BIND_TO_PORT", 8080)):
        raise ConfigError(
            f"SMSERVE_GRPC_PORT={port} is not a port of its own (1-65535, not the HTTP port "
            "SAGEMAKER_BIND_TO_PORT), nor 0 (gRPC off)"
        )
    return port


def _on_sagemaker(env: _Reader) -> bool:
    """The platform sets SAGEMAKER_BIND_TO_PORT (hosting) or SAGEMAKER_BATCH (Batch Transform)."""
    return env.text("SAGEMAKER_BIND_TO_PORT") is not None or env.boolean("SAGEMAKER_BATCH", False)


def _max_queued_requests(env: _Reader) -> int:
    default = 0 if _on_sagemaker(env) else DEFAULT_MAX_QUEUED
    return env.integer("SMSERVE_MAX_QUEUED_REQUESTS", default, minimum=0)


def _max_payload_bytes(env: _Reader) -> int:
    # The platform sets SAGEMAKER_MAX_PAYLOAD_IN_MB for Batch Transform, so it wins; the
    # XGBoost container's MAX_CONTENT_LENGTH (bytes) is honoured when it is absent.
    mib = env.optional_integer("SAGEMAKER_MAX_PAYLOAD_IN_MB", minimum=1)
    if mib is not None:
        return mib * MIB
    return env.integer("MAX_CONTENT_LENGTH", 6 * MIB, minimum=1)


def _sizing(env: _Reader, resources: Resources) -> dict[str, Any]:
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


def _inference_output(env: _Reader) -> tuple[str, ...] | None:
    raw = env.text("SAGEMAKER_INFERENCE_OUTPUT")
    if raw is None:
        return None
    keys = tuple(k.strip().lower() for k in raw.split(",") if k.strip())
    if not keys:
        raise ConfigError("SAGEMAKER_INFERENCE_OUTPUT is set but names no output")
    return keys


class _Reader:
    """Typed, strict reads of one environment mapping; errors name the variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def text(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def _convert(self, name: str, cast: Callable[[str], T], what: str) -> T | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return cast(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not {what}") from None

    def optional_integer(self, name: str, minimum: int = 0) -> int | None:
        value = self._convert(name, int, "an integer")
        if value is not None and value < minimum:
            raise ConfigError(f"{name}={value} must be at least {minimum}")
        return value

    def integer(self, name: str, default: int, minimum: int = 0) -> int:
        value = self.optional_integer(name, minimum)
        return default if value is None else value

    def number(self, name: str, default: float, minimum: float = 0.0) -> float:
        value = self._convert(name, float, "a number")
        if value is not None and value < minimum:
            raise ConfigError(f"{name}={value} must be at least {minimum}")
        return default if value is None else value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.text(name)
        if value is None:
            return default
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ConfigError(f"{name}={value!r} is not a boolean (use true or false)")

    def optional_choice(self, name: str, choices: tuple[str, ...]) -> str | None:
        value = self.text(name)
        if value is None:
            return None
        matched = {c.lower(): c for c in choices}.get(value.lower())
        if matched is None:
            raise ConfigError(f"{name}={value!r} must be one of: {', '.join(choices)}")
        return matched

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        return self.optional_choice(name, choices) or default

    def optional_path(self, name: str) -> Path | None:
        value = self.text(name)
        return None if value is None else Path(value)

    def path(self, name: str, default: Path) -> Path:
        return self.optional_path(name) or default

    def prefixed_paths(self, prefix: str) -> dict[str, Path]:
        """``{suffix.lower(): path}`` for every non-empty ``<prefix><SUFFIX>`` variable."""
        return {
            key[len(prefix) :].lower(): Path(value.strip())
            for key, value in self._environ.items()
            if key.startswith(prefix) and value.strip()
        }
