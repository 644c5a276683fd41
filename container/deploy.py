"""Deploy the smserve image as a SageMaker real-time endpoint, invoke it, tear it down.

    python container/deploy.py create --name smserve-demo \\
        --image 123456789012.dkr.ecr.us-east-1.amazonaws.com/smserve:latest \\
        --model-data s3://my-bucket/models/xgboost/model.tar.gz \\
        --role arn:aws:iam::123456789012:role/SageMakerExecutionRole \\
        --instance-type ml.m5.large --env SAGEMAKER_MODEL_SERVER_WORKERS=2
    python container/deploy.py invoke --name smserve-demo --payload local_test/payloads/dense.csv
    python container/deploy.py delete --name smserve-demo

`create` makes a Model, an EndpointConfig and an Endpoint that share one name and waits until
the endpoint is InService. `--multi-model` makes a multi-model endpoint: --model-data is then an
S3 prefix holding many model.tar.gz files, and `invoke --target-model` picks one.
Credentials and region come from the usual AWS sources (environment, profile, instance role).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sagemaker_api import DEFAULT_INSTANCE_TYPE, base_parser, logger, parse_env, run_command

log = logger("deploy")

DEFAULT_VARIANT = "AllTraffic"
WAIT_DELAY_S = 30
WAIT_MAX_ATTEMPTS = 60  # 30 minutes: image pull + model download + health checks


@dataclass(frozen=True)
class EndpointSpec:
    """Everything `create` needs; one name is used for the model, config and endpoint."""

    name: str
    image: str
    model_data_url: str
    role_arn: str
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    environment: Mapping[str, str] = field(default_factory=dict)
    variant_name: str = DEFAULT_VARIANT
    multi_model: bool = False
    startup_timeout_s: int | None = None

    def __post_init__(self) -> None:
        if not self.model_data_url.startswith("s3://"):
            raise ValueError(f"model data must be an s3:// URL, got {self.model_data_url!r}")
        if not self.multi_model and not self.model_data_url.endswith(".tar.gz"):
            raise ValueError(
                f"model data must be a .tar.gz archive (SageMaker extracts it into "
                f"/opt/ml/model), got {self.model_data_url!r}; use --multi-model for a prefix"
            )
        if self.instance_count < 1:
            raise ValueError(f"instance count must be at least 1, got {self.instance_count}")


def container_definition(spec: EndpointSpec) -> dict[str, Any]:
    """The PrimaryContainer of CreateModel."""
    definition: dict[str, Any] = {
        "Image": spec.image,
        "ModelDataUrl": spec.model_data_url,
        "Environment": dict(spec.environment),
    }
    if spec.multi_model:
        definition["Mode"] = "MultiModel"
    return definition


def production_variant(spec: EndpointSpec) -> dict[str, Any]:
    """The single ProductionVariant of CreateEndpointConfig."""
    variant: dict[str, Any] = {
        "VariantName": spec.variant_name,
        "ModelName": spec.name,
        "InstanceType": spec.instance_type,
        "InitialInstanceCount": spec.instance_count,
        "InitialVariantWeight": 1.0,
    }
    if spec.startup_timeout_s is not None:
        variant["ContainerStartupHealthCheckTimeoutInSeconds"] = spec.startup_timeout_s
    return variant


def create_endpoint(sagemaker: Any, spec: EndpointSpec, wait: bool = True) -> str:
    """CreateModel, CreateEndpointConfig, CreateEndpoint; waits for InService when ``wait``."""
    sagemaker.create_model(
        ModelName=spec.name,
        ExecutionRoleArn=spec.role_arn,
        PrimaryContainer=container_definition(spec),
    )
    log(f"created model {spec.name} ({spec.image})")
    sagemaker.create_endpoint_config(
        EndpointConfigName=spec.name, ProductionVariants=[production_variant(spec)]
    )
    log(f"created endpoint config {spec.name} ({spec.instance_count} x {spec.instance_type})")
    sagemaker.create_endpoint(EndpointName=spec.name, EndpointConfigName=spec.name)
    log(f"created endpoint {spec.name}")
    if wait:
        wait_in_service(sagemaker, spec.name)
    return spec.name


def wait_in_service(
    sagemaker: Any, name: str, delay_s: int = WAIT_DELAY_S, max_attempts: int = WAIT_MAX_ATTEMPTS
) -> None:
    """Block until the endpoint is InService; raises with the failure reason otherwise."""
    log(f"waiting for endpoint {name} to be InService (up to {delay_s * max_attempts} s)")
    waiter = sagemaker.get_waiter("endpoint_in_service")
    try:
        waiter.wait(EndpointName=name, WaiterConfig={"Delay": delay_s, "MaxAttempts": max_attempts})
    except Exception as error:
        reason = sagemaker.describe_endpoint(EndpointName=name).get("FailureReason", "")
        raise RuntimeError(f"endpoint {name} did not reach InService: {reason or error}") from error
    log(f"endpoint {name} is InService")


def delete_endpoint(sagemaker: Any, name: str) -> list[str]:
    """Delete the endpoint, its config and its model (each if present); returns what was deleted.

    The endpoint's config and model are looked up, so an endpoint created by other means is
    cleaned up too; resources named ``name`` are removed when the lookup finds nothing.
    """
    config_name, model_names = _endpoint_parts(sagemaker, name)
    steps = [
        ("endpoint", sagemaker.delete_endpoint, {"EndpointName": name}),
        ("endpoint config", sagemaker.delete_endpoint_config, {"EndpointConfigName": config_name}),
    ]
    steps.extend(("model", sagemaker.delete_model, {"ModelName": m}) for m in model_names)
    deleted = []
    for kind, call, kwargs in steps:
        if _ignore_missing(call, **kwargs):
            deleted.append(f"{kind} {next(iter(kwargs.values()))}")
            log(f"deleted {deleted[-1]}")
    return deleted


def _endpoint_parts(sagemaker: Any, name: str) -> tuple[str, list[str]]:
    """(config name, model names) of endpoint ``name``; (name, [name]) when it is not found."""
    try:
        config_name = sagemaker.describe_endpoint(EndpointName=name)["EndpointConfigName"]
        config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    except sagemaker.exceptions.ClientError:
        return name, [name]
    return config_name, [v["ModelName"] for v in config["ProductionVariants"]] or [name]


def _ignore_missing(call: Any, **kwargs: str) -> bool:
    """Run a Delete* call; False when the resource did not exist (ValidationException)."""
    try:
        call(**kwargs)
    except Exception as error:  # botocore ClientError; its class lives on each client
        code = getattr(error, "response", {}).get("Error", {}).get("Code")
        if code in ("ValidationException", "ValidationError", "ResourceNotFound"):
            return False
        raise
    return True


def invoke(
    runtime: Any,
    name: str,
    body: bytes,
    content_type: str,
    accept: str | None = None,
    target_model: str | None = None,
) -> tuple[str, bytes]:
    """InvokeEndpoint; returns (response content type, body)."""
    kwargs: dict[str, Any] = {"EndpointName": name, "Body": body, "ContentType": content_type}
    if accept:
        kwargs["Accept"] = accept
    if target_model:
        kwargs["TargetModel"] = target_model
    response = runtime.invoke_endpoint(**kwargs)
    return response["ContentType"], response["Body"].read()


def content_type_for(path: Path) -> str:
    """A Content-Type guessed from a payload file's extension (text/csv when unknown)."""
    return {
        ".json": "application/json",
        ".jsonl": "application/jsonlines",
        ".jsonlines": "application/jsonlines",
        ".libsvm": "text/libsvm",
        ".pbr": "application/x-recordio-protobuf",
        ".recordio": "application/x-recordio-protobuf",
    }.get(path.suffix.lower(), "text/csv")


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    create = commands.add_parser("create", help="create model, endpoint config and endpoint")
    create.add_argument("--name", required=True, help="model, endpoint config and endpoint name")
    create.add_argument("--image", required=True, help="ECR image URI")
    create.add_argument("--model-data", required=True, help="s3://.../model.tar.gz")
    create.add_argument("--role", required=True, help="SageMaker execution role ARN")
    create.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE)
    create.add_argument("--instance-count", type=int, default=1)
    create.add_argument("--variant-name", default=DEFAULT_VARIANT)
    create.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    create.add_argument("--multi-model", action="store_true", help="--model-data is a prefix")
    create.add_argument("--startup-timeout", type=int, metavar="SECONDS")
    create.add_argument("--no-wait", action="store_true", help="do not wait for InService")

    delete = commands.add_parser("delete", help="delete endpoint, endpoint config and model")
    delete.add_argument("--name", required=True)

    call = commands.add_parser("invoke", help="send one payload file to the endpoint")
    call.add_argument("--name", required=True)
    call.add_argument("--payload", required=True, type=Path)
    call.add_argument("--content-type", help="default: guessed from the file extension")
    call.add_argument("--accept")
    call.add_argument("--target-model", help="model.tar.gz path (multi-model endpoints)")
    return parser


def spec_from_args(args: argparse.Namespace) -> EndpointSpec:
    return EndpointSpec(
        name=args.name,
        image=args.image,
        model_data_url=args.model_data,
        role_arn=args.role,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        environment=parse_env(args.env),
        variant_name=args.variant_name,
        multi_model=args.multi_model,
        startup_timeout_s=args.startup_timeout,
    )


def run(args: argparse.Namespace, session: Any) -> int:
    if args.command == "create":
        spec = spec_from_args(args)
        print(create_endpoint(session.client("sagemaker"), spec, wait=not args.no_wait))
    elif args.command == "delete":
        delete_endpoint(session.client("sagemaker"), args.name)
    else:
        content_type = args.content_type or content_type_for(args.payload)
        runtime = session.client("sagemaker-runtime")
        body = args.payload.read_bytes()
        answer_type, answer = invoke(
            runtime, args.name, body, content_type, args.accept, args.target_model
        )
        log(f"response Content-Type: {answer_type}")
        sys.stdout.buffer.write(answer)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    code = run_command(build_parser(), argv, lambda args, connect: run(args, connect()), log)
    return 1 if code is None else code


if __name__ == "__main__":
    sys.exit(main())
