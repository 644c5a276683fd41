"""Settings.from_env with injected dicts: defaults, every variable, and errors that name it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smserve.config import MIB, Settings, TrainingSettings
from smserve.errors import ConfigError
from smserve.resources import detect


def test_defaults() -> None:
    resources = detect()
    settings = Settings.from_env({}, resources)
    assert settings == Settings(
        workers=resources.cpu_count,
        cpu_count=resources.cpu_count,
        memory_limit_bytes=resources.memory_bytes,
        resources_note=resources.describe(),
        request_memory_bytes=resources.request_memory(resources.cpu_count, 1),
        memory_budget_bytes=resources.model_budget(resources.cpu_count),
    )
    assert settings.model_dir == Path("/opt/ml/model")
    assert (settings.port, settings.max_payload_bytes, settings.max_payload_mib) == (
        8080,
        6 * MIB,
        6,
    )


def test_from_env_never_reads_the_process_environment_when_given_a_mapping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SAGEMAKER_BIND_TO_PORT", "9999")
    assert Settings.from_env({}).port == 8080


EVERY_VARIABLE = [
    ("SM_MODEL_DIR", "/models/a", "model_dir", Path("/models/a")),
    ("SAGEMAKER_BIND_TO_PORT", "9090", "port", 9090),
    ("SMSERVE_BIND_HOST", "127.0.0.1", "bind_host", "127.0.0.1"),
    ("SMSERVE_MAX_QUEUED_REQUESTS", "9", "max_queued_requests", 9),
    ("SAGEMAKER_MODEL_SERVER_WORKERS", "3", "workers", 3),
    ("SMSERVE_THREADS", "4", "threads", 4),
    ("SAGEMAKER_MODEL_SERVER_TIMEOUT", "120", "timeout_s", 120),
    ("SMSERVE_KEEP_ALIVE_S", "5", "keep_alive_s", 5),
    ("SMSERVE_GRACEFUL_TIMEOUT_S", "10", "graceful_timeout_s", 10),
    ("SMSERVE_LOG_LEVEL", "DEBUG", "log_level", "debug"),
    ("SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT", "text/csv", "default_accept", "text/csv"),
    ("SAGEMAKER_MAX_PAYLOAD_IN_MB", "20", "max_payload_bytes", 20 * MIB),
    ("MAX_CONTENT_LENGTH", "1000", "max_payload_bytes", 1000),
    ("SAGEMAKER_BATCH", "true", "batch_mode", True),
    ("SAGEMAKER_BATCH_STRATEGY", "single_record", "batch_strategy", "SINGLE_RECORD"),
    ("SAGEMAKER_MAX_CONCURRENT_TRANSFORMS", "8", "max_concurrent_transforms", 8),
    ("SMSERVE_ALGORITHM", "KMeans", "algorithm", "kmeans"),
    ("SMSERVE_KMEANS_DISTANCE", "squared", "kmeans_distance", "squared"),
    (
        "SAGEMAKER_INFERENCE_OUTPUT",
        "Predicted_Label, probabilities",
        "inference_output",
        ("predicted_label", "probabilities"),
    ),  # fmt: skip
    ("SAGEMAKER_INFERENCE_ENSEMBLE", "false", "ensemble", False),
    ("SMSERVE_ALLOW_PICKLE", "1", "allow_pickle", True),
    ("SMSERVE_XGBOOST_DEVICE", "cpu", "xgboost_device", "cpu"),
    ("SMSERVE_FAST_PREDICTOR", "off", "fast_predictor", "off"),
    ("SMSERVE_LIBSVM_INDEX_BASE", "auto", "libsvm_index_base", "auto"),
    ("SMSERVE_ALLOW_ONE_FEWER_FEATURE", "yes", "allow_one_fewer_feature", True),
    ("SAGEMAKER_MULTI_MODEL", "true", "multi_model", True),
    ("SMSERVE_MODELS_DIR", "/mm", "models_dir", Path("/mm")),
    ("MODEL_NAME", "km", "model_name", "km"),
    ("MODEL_BASE_PATH", "/models", "model_base_path", Path("/models")),
    ("SMSERVE_MODEL_CONFIG_FILE", "/m.config", "model_config_file", Path("/m.config")),
    ("SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS", "0.5", "poll_interval_s", 0.5),
    ("SMSERVE_MEMORY_BUDGET_MB", "512", "memory_budget_bytes", 512 * MIB),
    ("SMSERVE_REQUEST_MEMORY_MB", "300", "request_memory_bytes", 300 * MIB),
    ("SMSERVE_REQUEST_MEMORY_RATIO", "128", "request_memory_ratio", 128),
    ("SMSERVE_MAX_MODEL_UNPACKED_MB", "100", "max_model_unpacked_bytes", 100 * MIB),
    ("SMSERVE_RUNTIME_DIR", "/run/smserve", "runtime_dir", Path("/run/smserve")),
    ("SMSERVE_CACHE_DIR", "/cache", "cache_dir", Path("/cache")),
    ("SMSERVE_FRONTEND", "nginx", "frontend", "nginx"),
    ("SMSERVE_CLIENT_HEADER_TIMEOUT_S", "3", "client_header_timeout_s", 3),
    ("SMSERVE_CLIENT_BODY_TIMEOUT_S", "4", "client_body_timeout_s", 4),
    ("SMSERVE_MAX_CONNECTIONS", "100", "max_connections", 100),
    ("SMSERVE_KEEPALIVE_REQUESTS", "50", "keepalive_requests", 50),
    ("AWS_ENDPOINT_URL_S3", "http://s3:9000", "s3_endpoint_url", "http://s3:9000"),
    ("SAGEMAKER_CONTAINER_LOG_LEVEL", "10", "log_level", "debug"),
    ("SMSERVE_METRICS_PATH", "/custom/metrics_v1.0", "metrics_path", "/custom/metrics_v1.0"),
    ("SMSERVE_NGINX", "/opt/nginx/sbin/nginx", "nginx", Path("/opt/nginx/sbin/nginx")),
    ("SMSERVE_RESPONSE_BUFFER_KB", "1024", "response_buffer_bytes", 1024 * 1024),
    ("SMSERVE_REQUEST_BUFFER_KB", "64", "request_buffer_bytes", 64 * 1024),
    ("SMSERVE_RESPONSE_SPILL_MB", "0", "response_spill_bytes", 0),
    ("AWS_ENDPOINT_URL", "http://aws:4566", "s3_endpoint_url", "http://aws:4566"),
]


@pytest.mark.parametrize(("name", "value", "field", "expected"), EVERY_VARIABLE, ids=lambda v: v)
def test_every_variable(name: str, value: str, field: str, expected: Any) -> None:
    assert getattr(Settings.from_env({name: value}), field) == expected


# Detected from the container's limits (tests/unit/test_resources.py), not read from a variable.
DETECTED = {"cpu_count", "memory_limit_bytes", "resources_note"}
DECLARED = {"declared"}  # the doors' own variables: tests/unit/test_door_table.py


def test_every_field_has_a_variable() -> None:
    variables = {field for _, _, field, _ in EVERY_VARIABLE}
    assert variables | DETECTED | DECLARED == set(Settings.__dataclass_fields__)


def test_blank_values_mean_unset() -> None:
    assert Settings.from_env({"SAGEMAKER_BIND_TO_PORT": "  ", "MODEL_NAME": ""}).port == 8080


def test_payload_in_mb_wins_over_max_content_length() -> None:
    env = {"SAGEMAKER_MAX_PAYLOAD_IN_MB": "2", "MAX_CONTENT_LENGTH": "1000"}
    assert Settings.from_env(env).max_payload_bytes == 2 * MIB


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SAGEMAKER_BIND_TO_PORT", "http"),
        ("SAGEMAKER_BIND_TO_PORT", "0"),
        ("SAGEMAKER_MODEL_SERVER_WORKERS", "0"),
        ("SMSERVE_THREADS", "1.5"),
        ("SAGEMAKER_MODEL_SERVER_TIMEOUT", "-1"),
        ("SMSERVE_LOG_LEVEL", "verbose"),
        ("SAGEMAKER_MAX_PAYLOAD_IN_MB", "0"),
        ("MAX_CONTENT_LENGTH", "6MB"),
        ("SAGEMAKER_BATCH", "maybe"),
        ("SAGEMAKER_BATCH_STRATEGY", "ALL"),
        ("SAGEMAKER_INFERENCE_OUTPUT", " , "),
        ("SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS", "soon"),
        ("SMSERVE_MEMORY_BUDGET_MB", "0"),
        ("SMSERVE_MAX_MODEL_UNPACKED_MB", "0"),
        ("SAGEMAKER_CONTAINER_LOG_LEVEL", "5"),
        ("SAGEMAKER_CONTAINER_LOG_LEVEL", "51"),
        ("SAGEMAKER_CONTAINER_LOG_LEVEL", "loud"),
        ("SMSERVE_METRICS_PATH", "metrics"),
        ("SMSERVE_METRICS_PATH", "/met rics"),
        ("SMSERVE_METRICS_PATH", "/a//b"),
        ("SMSERVE_METRICS_PATH", "/a/../b"),
        ("SMSERVE_METRICS_PATH", "/metrics;"),
        # the server's and the doors' paths: tests/unit/test_door_table.py
        ("SMSERVE_METRICS_PATH", "/"),
        ("SMSERVE_RESPONSE_BUFFER_KB", "100"),
    ],
    ids=lambda v: v,
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("10", "debug"),
        ("15", "info"),  # as Python's logging reads 15: info and above
        ("20", "info"),
        ("30", "warning"),
        ("40", "error"),
        ("50", "critical"),
        ("DEBUG", "debug"),
        ("Warn", "warning"),
        ("fatal", "critical"),
    ],
)
def test_the_sdk_container_log_level(value: str, level: str) -> None:
    assert Settings.from_env({"SAGEMAKER_CONTAINER_LOG_LEVEL": value}).log_level == level


def test_smserve_log_level_wins_over_the_sdk_s() -> None:
    env = {"SAGEMAKER_CONTAINER_LOG_LEVEL": "10", "SMSERVE_LOG_LEVEL": "warning"}
    assert Settings.from_env(env).log_level == "warning"
    assert TrainingSettings.from_env(env).log_level == "warning"
    assert TrainingSettings.from_env({"SAGEMAKER_CONTAINER_LOG_LEVEL": "40"}).log_level == "error"


def test_replace_applies_known_fields_only() -> None:
    settings = Settings().replace(port=1234)
    assert settings.port == 1234
    with pytest.raises(TypeError, match="prot"):
        settings.replace(prot=1)


def test_training_settings_resolve_the_sagemaker_layout_and_overrides() -> None:
    settings = TrainingSettings.from_env(
        {
            "SMSERVE_TRAINING_BASE_DIR": "/job",
            "SM_MODEL_DIR": "/out/model",
            "SM_CHANNEL_TRAIN": "/data/train",
            "SM_CHANNEL_VALIDATION": " ",
            "SMSERVE_ALGORITHM": "KMeans",
        }
    )
    assert settings.config_dir == Path("/job/input/config")
    assert settings.data_dir == Path("/job/input/data")
    assert settings.model_dir == Path("/out/model")
    assert settings.output_dir == Path("/job/output")
    assert settings.channel_dirs == {"train": Path("/data/train")}
    assert settings.algorithm == "kmeans"


def test_training_settings_name_the_bad_variable() -> None:
    with pytest.raises(ConfigError, match="SMSERVE_LIBSVM_INDEX_BASE"):
        TrainingSettings.from_env({"SMSERVE_LIBSVM_INDEX_BASE": "2"})
    assert TrainingSettings.output_dir_of({"SM_OUTPUT_DIR": "/o"}) == Path("/o")
