"""container/batch_transform.py against moto's SageMaker: the CreateTransformJob request, read back
through DescribeTransformJob. Nothing here runs a real job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.container.container_modules import CONTAINER, load

batch = load(CONTAINER / "batch_transform.py")

REGION = "us-east-1"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/smserve:latest"


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        client = boto3.client("sagemaker", region_name=REGION)
        client.create_model(
            ModelName="smserve-model",
            ExecutionRoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
            PrimaryContainer={"Image": IMAGE, "ModelDataUrl": "s3://bucket/model.tar.gz"},
        )
        yield client


def spec(**changes: Any) -> Any:
    values: dict[str, Any] = {
        "job_name": "smserve-batch",
        "model_name": "smserve-model",
        "input_s3_uri": "s3://bucket/in/",
        "output_s3_uri": "s3://bucket/out/",
    }
    values.update(changes)
    return batch.TransformSpec(**values)


def test_csv_job_splits_and_assembles_by_line(sagemaker: Any) -> None:
    batch.start_transform(sagemaker, spec())

    job = sagemaker.describe_transform_job(TransformJobName="smserve-batch")
    assert job["ModelName"] == "smserve-model"
    assert job["TransformInput"]["SplitType"] == "Line"
    assert job["TransformInput"]["ContentType"] == "text/csv"
    assert job["TransformInput"]["DataSource"]["S3DataSource"] == {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://bucket/in/",
    }
    assert job["TransformOutput"]["AssembleWith"] == "Line"
    assert job["TransformOutput"]["Accept"] == "text/csv"
    assert job["TransformOutput"]["S3OutputPath"] == "s3://bucket/out/"
    assert job["BatchStrategy"] == "MultiRecord"
    assert job["MaxPayloadInMB"] == 6
    assert job["TransformResources"] == {"InstanceType": "ml.m5.large", "InstanceCount": 1}


def test_jsonlines_job_sends_and_accepts_jsonlines(sagemaker: Any) -> None:
    batch.start_transform(sagemaker, spec(data_format="jsonlines"))

    job = sagemaker.describe_transform_job(TransformJobName="smserve-batch")
    assert job["TransformInput"]["ContentType"] == "application/jsonlines"
    assert job["TransformOutput"]["Accept"] == "application/jsonlines"
    assert job["TransformOutput"]["AssembleWith"] == "Line"


def test_explicit_types_override_the_format() -> None:
    request = batch.transform_request(spec(content_type="text/libsvm", accept="application/json"))
    assert request["TransformInput"]["ContentType"] == "text/libsvm"
    assert request["TransformOutput"]["Accept"] == "application/json"


def test_unsplit_input_is_not_assembled_by_line() -> None:
    request = batch.transform_request(spec(split_type="None", batch_strategy="SingleRecord"))
    assert request["TransformInput"]["SplitType"] == "None"
    assert request["TransformOutput"]["AssembleWith"] == "None"
    assert request["BatchStrategy"] == "SingleRecord"


def test_optional_fields_only_when_given(sagemaker: Any) -> None:
    assert not {"MaxConcurrentTransforms", "Environment", "DataProcessing"} & set(
        batch.transform_request(spec())
    )
    batch.start_transform(
        sagemaker,
        spec(
            max_concurrent_transforms=4,
            environment={"SAGEMAKER_MODEL_SERVER_WORKERS": "4"},
            input_filter="$[1:]",
            join_source="Input",
        ),
    )

    job = sagemaker.describe_transform_job(TransformJobName="smserve-batch")
    assert job["MaxConcurrentTransforms"] == 4
    assert job["Environment"] == {"SAGEMAKER_MODEL_SERVER_WORKERS": "4"}
    assert job["DataProcessing"] == {"InputFilter": "$[1:]", "JoinSource": "Input"}


def test_wait_returns_the_completed_job(sagemaker: Any) -> None:
    batch.start_transform(sagemaker, spec())

    job = batch.wait_for_transform(sagemaker, "smserve-batch", delay_s=1, max_attempts=2)

    assert job["TransformJobStatus"] == "Completed"


class StoppedJobClient:
    class Waiter:
        def wait(self, **kwargs: Any) -> None:
            pass

    def get_waiter(self, name: str) -> Waiter:
        assert name == "transform_job_completed_or_stopped"
        return self.Waiter()

    def describe_transform_job(self, TransformJobName: str) -> dict[str, Any]:  # noqa: N803
        return {"TransformJobStatus": "Stopped", "TransformOutput": {"S3OutputPath": "s3://b/"}}


def test_wait_raises_when_the_job_did_not_complete() -> None:
    with pytest.raises(RuntimeError, match="ended Stopped"):
        batch.wait_for_transform(StoppedJobClient(), "smserve-batch", delay_s=1, max_attempts=1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"input_s3_uri": "/data/in"}, "s3://"),
        ({"data_format": "parquet"}, "format"),
        ({"split_type": "Lines"}, "split type"),
        ({"batch_strategy": "MULTI_RECORD"}, "batch strategy"),
        ({"max_payload_mb": 101}, "max payload"),
    ],
)
def test_spec_rejects_invalid_values(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec(**changes)


def test_command_line_runs_and_waits(sagemaker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--region", REGION, "--job-name", "cli-job", "--model-name", "smserve-model"]
    argv += ["--input", "s3://bucket/in/", "--output", "s3://bucket/out/", "--format", "jsonlines"]
    argv += ["--max-payload-mb", "20", "--env", "SMSERVE_THREADS=2"]

    assert batch.main(argv) == 0

    assert capsys.readouterr().out.strip() == "cli-job"
    job = sagemaker.describe_transform_job(TransformJobName="cli-job")
    assert job["TransformJobStatus"] == "Completed"
    assert job["MaxPayloadInMB"] == 20
    assert job["Environment"] == {"SMSERVE_THREADS": "2"}
    assert job["TransformInput"]["SplitType"] == "Line"
