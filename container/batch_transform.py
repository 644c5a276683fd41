"""Run a SageMaker Batch Transform job with an existing smserve model.

    python container/batch_transform.py --job-name smserve-batch-1 --model-name smserve-demo \\
        --input s3://my-bucket/batch/in/ --output s3://my-bucket/batch/out/

Input files are split into lines (SplitType Line), sent to the container's /invocations in
mini-batches up to --max-payload-mb (BatchStrategy MultiRecord), and the answers are joined
again line by line (AssembleWith Line): one output line per input line, in order.
`--format jsonlines` sends and receives application/jsonlines instead of text/csv.
The model is one created by `deploy.py create` (or any CreateModel with the smserve image).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sagemaker_api import DEFAULT_INSTANCE_TYPE, base_parser, logger, parse_env, run_command

log = logger("batch_transform")

FORMATS: Mapping[str, str] = {"csv": "text/csv", "jsonlines": "application/jsonlines"}
SPLIT_TYPES = ("Line", "None", "RecordIO")
BATCH_STRATEGIES = ("MultiRecord", "SingleRecord")
WAIT_DELAY_S = 30
WAIT_MAX_ATTEMPTS = 240  # 2 hours


@dataclass(frozen=True)
class TransformSpec:
    """One CreateTransformJob request; content type and accept default to ``data_format``'s."""

    job_name: str
    model_name: str
    input_s3_uri: str
    output_s3_uri: str
    data_format: str = "csv"
    content_type: str | None = None
    accept: str | None = None
    split_type: str = "Line"
    batch_strategy: str = "MultiRecord"
    max_payload_mb: int = 6
    max_concurrent_transforms: int | None = None
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    environment: Mapping[str, str] = field(default_factory=dict)
    input_filter: str | None = None
    join_source: str | None = None
    output_filter: str | None = None

    def __post_init__(self) -> None:
        for uri in (self.input_s3_uri, self.output_s3_uri):
            if not uri.startswith("s3://"):
                raise ValueError(f"input and output must be s3:// URIs, got {uri!r}")
        if self.data_format not in FORMATS:
            raise ValueError(
                f"format must be one of {', '.join(FORMATS)}, got {self.data_format!r}"
            )
        if self.split_type not in SPLIT_TYPES:
            raise ValueError(f"split type must be one of {', '.join(SPLIT_TYPES)}")
        if self.batch_strategy not in BATCH_STRATEGIES:
            raise ValueError(f"batch strategy must be one of {', '.join(BATCH_STRATEGIES)}")
        if not 0 <= self.max_payload_mb <= 100:
            raise ValueError(f"max payload must be 0..100 MB, got {self.max_payload_mb}")

    @property
    def request_content_type(self) -> str:
        return self.content_type or FORMATS[self.data_format]

    @property
    def response_accept(self) -> str:
        return self.accept or FORMATS[self.data_format]


def transform_request(spec: TransformSpec) -> dict[str, Any]:
    """The keyword arguments of CreateTransformJob for ``spec``."""
    request: dict[str, Any] = {
        "TransformJobName": spec.job_name,
        "ModelName": spec.model_name,
        "BatchStrategy": spec.batch_strategy,
        "MaxPayloadInMB": spec.max_payload_mb,
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": spec.input_s3_uri}},
            "ContentType": spec.request_content_type,
            "SplitType": spec.split_type,
        },
        "TransformOutput": {
            "S3OutputPath": spec.output_s3_uri,
            "Accept": spec.response_accept,
            "AssembleWith": "Line" if spec.split_type == "Line" else "None",
        },
        "TransformResources": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
        },
    }
    if spec.max_concurrent_transforms is not None:
        request["MaxConcurrentTransforms"] = spec.max_concurrent_transforms
    if spec.environment:
        request["Environment"] = dict(spec.environment)
    processing = _data_processing(spec)
    if processing:
        request["DataProcessing"] = processing
    return request


def _data_processing(spec: TransformSpec) -> dict[str, str]:
    values = {
        "InputFilter": spec.input_filter,
        "JoinSource": spec.join_source,
        "OutputFilter": spec.output_filter,
    }
    return {key: value for key, value in values.items() if value}


def start_transform(sagemaker: Any, spec: TransformSpec) -> str:
    """CreateTransformJob; returns the job ARN."""
    arn: str = sagemaker.create_transform_job(**transform_request(spec))["TransformJobArn"]
    log(f"started transform job {spec.job_name} ({arn})")
    return arn


def wait_for_transform(
    sagemaker: Any,
    job_name: str,
    delay_s: int = WAIT_DELAY_S,
    max_attempts: int = WAIT_MAX_ATTEMPTS,
) -> dict[str, Any]:
    """Block until the job completes; returns its description, raises when it failed."""
    log(f"waiting for transform job {job_name}")
    sagemaker.get_waiter("transform_job_completed_or_stopped").wait(
        TransformJobName=job_name, WaiterConfig={"Delay": delay_s, "MaxAttempts": max_attempts}
    )
    description: dict[str, Any] = sagemaker.describe_transform_job(TransformJobName=job_name)
    status = description["TransformJobStatus"]
    if status != "Completed":
        reason = description.get("FailureReason") or "no reason given"
        raise RuntimeError(f"transform job {job_name} ended {status}: {reason}")
    output = description["TransformOutput"]["S3OutputPath"]
    log(f"transform job {job_name} completed; output in {output}")
    return description


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__)
    parser.add_argument("--job-name", required=True)
    parser.add_argument("--model-name", required=True, help="an existing SageMaker model")
    parser.add_argument("--input", required=True, help="s3:// prefix of the input files")
    parser.add_argument("--output", required=True, help="s3:// prefix for the .out files")
    parser.add_argument("--format", choices=sorted(FORMATS), default="csv")
    parser.add_argument("--content-type", help="override the request Content-Type")
    parser.add_argument("--accept", help="override the response Accept")
    parser.add_argument("--split-type", choices=SPLIT_TYPES, default="Line")
    parser.add_argument("--batch-strategy", choices=BATCH_STRATEGIES, default="MultiRecord")
    parser.add_argument("--max-payload-mb", type=int, default=6)
    parser.add_argument("--max-concurrent", type=int, help="MaxConcurrentTransforms")
    parser.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE)
    parser.add_argument("--instance-count", type=int, default=1)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--input-filter", help="JSONPath, e.g. '$[1:]' to drop a label column")
    parser.add_argument("--join-source", choices=("Input", "None"))
    parser.add_argument("--output-filter", help="JSONPath applied to the joined output")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for completion")
    return parser


def spec_from_args(args: argparse.Namespace) -> TransformSpec:
    return TransformSpec(
        job_name=args.job_name,
        model_name=args.model_name,
        input_s3_uri=args.input,
        output_s3_uri=args.output,
        data_format=args.format,
        content_type=args.content_type,
        accept=args.accept,
        split_type=args.split_type,
        batch_strategy=args.batch_strategy,
        max_payload_mb=args.max_payload_mb,
        max_concurrent_transforms=args.max_concurrent,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        environment=parse_env(args.env),
        input_filter=args.input_filter,
        join_source=args.join_source,
        output_filter=args.output_filter,
    )


def run(args: argparse.Namespace, connect: Callable[[], Any]) -> str:
    """Start the job and, unless --no-wait, wait for it; returns the job name."""
    spec = spec_from_args(args)
    sagemaker = connect().client("sagemaker")
    start_transform(sagemaker, spec)
    if not args.no_wait:
        wait_for_transform(sagemaker, spec.job_name)
    return spec.job_name


def main(argv: Sequence[str] | None = None) -> int:
    job_name = run_command(build_parser(), argv, run, log)
    if job_name is None:
        return 1
    print(job_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
