"""What container/deploy.py and container/batch_transform.py share: the command-line frame
(--region, --env, logging, the deferred boto3 session, errors as exit status 1).

Not a package: each script imports this module from its own folder, which Python puts first on
sys.path when the script runs (`python container/deploy.py ...`, from any working directory).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

DEFAULT_INSTANCE_TYPE = "ml.m5.large"

T = TypeVar("T")
Log = Callable[[str], None]
Command = Callable[[argparse.Namespace, Callable[[], Any]], T]


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """{'A': '1'} from ['A=1']."""
    environment = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--env expects KEY=VALUE, got {pair!r}")
        environment[key] = value
    return environment


def logger(prefix: str) -> Log:
    """A ``log(message)`` that writes ``prefix: message`` to standard error."""

    def log(message: str) -> None:
        print(f"{prefix}: {message}", file=sys.stderr, flush=True)

    return log


def base_parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by the first line of ``doc``, with the --region option."""
    parser = argparse.ArgumentParser(
        description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--region", help="AWS region (default: from the AWS configuration)")
    return parser


def run_command(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, command: Command[T], log: Log
) -> T | None:
    """Parse ``argv`` and return ``command(args, connect)``, where ``connect()`` makes the boto3
    Session for --region; a ValueError or RuntimeError is logged and gives None."""
    args = parser.parse_args(argv)
    import boto3  # deferred: `--help` works without boto3 installed

    try:
        return command(args, lambda: boto3.Session(region_name=args.region))
    except (ValueError, RuntimeError) as error:
        log(f"error: {error}")
        return None
