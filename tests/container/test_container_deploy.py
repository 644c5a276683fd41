"""container/deploy.py against moto's SageMaker: the requests it sends, read back through the
Describe* APIs. Nothing here runs a real endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.container.container_modules import CONTAINER, load

deploy = load(CONTAINER / "deploy.py")

REGION = "us-east-1"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/smserve:latest"
MODEL_DATA = "s3://bucket/models/xgboost/model.tar.gz"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


@pytest.fixture
def sagemaker(aws: None) -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def spec(**changes: Any) -> Any:
    values: dict[str, Any] = {
        "name": "smserve-test",
        "image": IMAGE,
        "model_data_url": MODEL_DATA,
        "role_arn": ROLE,
        "instance_type": "ml.c5.xlarge",
        "instance_count": 2,
        "environment": {"SAGEMAKER_MODEL_SERVER_WORKERS": "2"},
    }
    values.update(changes)
    return deploy.EndpointSpec(**values)


def test_create_sends_the_model_definition(sagemaker: Any) -> None:
    assert deploy.create_endpoint(sagemaker, spec()) == "smserve-test"

    model = sagemaker.describe_model(ModelName="smserve-test")
    assert model["ExecutionRoleArn"] == ROLE
    assert model["PrimaryContainer"]["Image"] == IMAGE
    assert model["PrimaryContainer"]["ModelDataUrl"] == MODEL_DATA
    assert model["PrimaryContainer"]["Environment"] == {"SAGEMAKER_MODEL_SERVER_WORKERS": "2"}
    assert "Mode" not in model["PrimaryContainer"]


def test_create_sends_one_production_variant(sagemaker: Any) -> None:
    deploy.create_endpoint(sagemaker, spec(startup_timeout_s=600))

    config = sagemaker.describe_endpoint_config(EndpointConfigName="smserve-test")
    [variant] = config["ProductionVariants"]
    assert variant["VariantName"] == "AllTraffic"
    assert variant["ModelName"] == "smserve-test"
    assert variant["InstanceType"] == "ml.c5.xlarge"
    assert variant["InitialInstanceCount"] == 2
    assert variant["InitialVariantWeight"] == 1.0


def test_create_waits_for_in_service(sagemaker: Any) -> None:
    deploy.create_endpoint(sagemaker, spec())

    endpoint = sagemaker.describe_endpoint(EndpointName="smserve-test")
    assert endpoint["EndpointConfigName"] == "smserve-test"
    assert endpoint["EndpointStatus"] == "InService"


def test_multi_model_endpoint_takes_a_prefix(sagemaker: Any) -> None:
    deploy.create_endpoint(sagemaker, spec(model_data_url="s3://bucket/models/", multi_model=True))

    container = sagemaker.describe_model(ModelName="smserve-test")["PrimaryContainer"]
    assert container["Mode"] == "MultiModel"
    assert container["ModelDataUrl"] == "s3://bucket/models/"


def test_variant_carries_the_startup_timeout() -> None:
    variant = deploy.production_variant(spec(startup_timeout_s=600))
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 600
    assert "ContainerStartupHealthCheckTimeoutInSeconds" not in deploy.production_variant(spec())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_data_url": "/local/model.tar.gz"}, "s3://"),
        ({"model_data_url": "s3://bucket/model.pkl"}, ".tar.gz"),
        ({"instance_count": 0}, "at least 1"),
    ],
)
def test_spec_rejects_what_sagemaker_would(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec(**changes)


def test_delete_removes_endpoint_config_and_model(sagemaker: Any) -> None:
    deploy.create_endpoint(sagemaker, spec())

    deleted = deploy.delete_endpoint(sagemaker, "smserve-test")

    assert deleted == [
        "endpoint smserve-test",
        "endpoint config smserve-test",
        "model smserve-test",
    ]
    assert sagemaker.list_endpoints()["Endpoints"] == []
    assert sagemaker.list_endpoint_configs()["EndpointConfigs"] == []
    assert sagemaker.list_models()["Models"] == []


def test_delete_finds_config_and_model_of_an_endpoint_named_differently(sagemaker: Any) -> None:
    deploy.create_endpoint(sagemaker, spec(name="model-a"))
    sagemaker.create_endpoint(EndpointName="other-endpoint", EndpointConfigName="model-a")
    sagemaker.delete_endpoint(EndpointName="model-a")

    deleted = deploy.delete_endpoint(sagemaker, "other-endpoint")

    assert deleted == ["endpoint other-endpoint", "endpoint config model-a", "model model-a"]


def test_delete_of_nothing_is_a_no_op(sagemaker: Any) -> None:
    assert deploy.delete_endpoint(sagemaker, "never-created") == []


class FailingWaiter:
    def wait(self, **kwargs: Any) -> None:
        raise RuntimeError("Waiter EndpointInService failed: Waiter encountered a terminal state")


class FailedEndpointClient:
    def get_waiter(self, name: str) -> FailingWaiter:
        assert name == "endpoint_in_service"
        return FailingWaiter()

    def describe_endpoint(self, EndpointName: str) -> dict[str, str]:  # noqa: N803 (boto3 name)
        return {"EndpointStatus": "Failed", "FailureReason": "The primary container failed /ping"}


def test_wait_reports_the_failure_reason() -> None:
    with pytest.raises(RuntimeError, match="failed /ping"):
        deploy.wait_in_service(FailedEndpointClient(), "smserve-test", delay_s=1, max_attempts=1)


def test_invoke_passes_types_and_target_model(aws: None) -> None:
    runtime = boto3.client("sagemaker-runtime", region_name=REGION)
    sent: dict[str, Any] = {}

    def capture(params: dict[str, Any], **kwargs: Any) -> None:
        sent.update(params)

    runtime.meta.events.register("before-parameter-build.sagemaker-runtime.InvokeEndpoint", capture)
    content_type, body = deploy.invoke(
        runtime, "smserve-test", b"1,2,3,4\n", "text/csv", "application/json", "a/model.tar.gz"
    )

    assert sent["ContentType"] == "text/csv"
    assert sent["Accept"] == "application/json"
    assert sent["TargetModel"] == "a/model.tar.gz"
    assert isinstance(content_type, str)
    assert isinstance(body, bytes)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("p.csv", "text/csv"),
        ("p.json", "application/json"),
        ("p.jsonl", "application/jsonlines"),
        ("p.libsvm", "text/libsvm"),
        ("p.pbr", "application/x-recordio-protobuf"),
        ("p.txt", "text/csv"),
    ],
)
def test_content_type_from_extension(name: str, expected: str) -> None:
    from pathlib import Path

    assert deploy.content_type_for(Path(name)) == expected


def test_env_pairs_are_parsed() -> None:
    assert deploy.parse_env(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        deploy.parse_env(["novalue"])


def test_command_line_create_then_delete(
    sagemaker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--region", REGION, "create", "--name", "cli-endpoint", "--image", IMAGE]
    argv += ["--model-data", MODEL_DATA, "--role", ROLE, "--env", "SMSERVE_THREADS=4"]
    assert deploy.main(argv) == 0
    assert capsys.readouterr().out.strip() == "cli-endpoint"
    container = sagemaker.describe_model(ModelName="cli-endpoint")["PrimaryContainer"]
    assert container["Environment"] == {"SMSERVE_THREADS": "4"}
    [variant] = sagemaker.describe_endpoint_config(EndpointConfigName="cli-endpoint")[
        "ProductionVariants"
    ]
    assert (variant["InstanceType"], variant["InitialInstanceCount"]) == ("ml.m5.large", 1)

    assert deploy.main(["--region", REGION, "delete", "--name", "cli-endpoint"]) == 0
    assert sagemaker.list_models()["Models"] == []


def test_command_line_reports_a_bad_model_url(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["create", "--name", "x", "--image", IMAGE, "--model-data", "model.tar.gz"]
    assert deploy.main([*argv, "--role", ROLE]) == 1
    assert "s3://" in capsys.readouterr().err
