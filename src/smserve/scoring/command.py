"""``smserve score``: its flags, and a run from parsed flags to an exit status.

Exit status: 0 every record scored; 1 a file failed (it has no output; the log names the
record); 3 finished, but ``--on-error skip`` wrote error lines; 130 stopped by Ctrl-C. Usage
and model errors raise StartupError or ClientError, which the CLI reports with status 2."""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from smserve.algorithms.catalog import spec_for
from smserve.config import MIB, Settings
from smserve.scoring.options import (
    ASSEMBLE_WITH,
    BATCH_STRATEGIES,
    ENGINES,
    EXIT_INTERRUPTED,
    JOIN_SOURCES,
    ON_ERROR,
    SPLIT_TYPES,
    Plan,
    Run,
)

if TYPE_CHECKING:
    from smserve.scoring.engine import Summary
    from smserve.scoring.inputs import InputFile
    from smserve.scoring.progress import Progress

    Engine = Callable[[Sequence[InputFile], Settings, Plan, Run, Progress], Summary]

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files, folders, s3:// objects or prefixes, or -"
    )
    parser.add_argument("--model-dir", type=Path, help="the model (default: SM_MODEL_DIR)")
    parser.add_argument("--output", help="folder (or s3:// prefix) for the .out files")
    parser.add_argument("--content-type", help="the inputs' type (default: the model's)")
    parser.add_argument("--accept", help="the answers' type (default: the model's)")
    _choice(parser, "--split-type", SPLIT_TYPES, "how records are found (Batch Transform's)")
    parser.add_argument(
        "--batch-strategy",
        choices=BATCH_STRATEGIES,
        help="records per mini-batch (default: SAGEMAKER_BATCH_STRATEGY, else MultiRecord)",
    )
    parser.add_argument("--max-payload-mb", type=_mib, help="mini-batch limit in MiB")
    _choice(parser, "--assemble-with", ASSEMBLE_WITH, "Line: every answer ends a line")
    _choice(parser, "--join-source", JOIN_SOURCES, "Input: each answer joined to its record")
    _choice(parser, "--on-error", ON_ERROR, "a bad record fails its file, or gets an error line")
    parser.add_argument("--workers", type=positive_integer, help="processes (default: one per CPU)")
    parser.add_argument("--skip-existing", action="store_true", help="resume: keep done .out")
    parser.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS")
    _choice(parser, "--engine", ENGINES, "local processes, Ray Data, or Spark")
    parser.add_argument(
        "--address",
        help="the cluster: Ray's address (--engine ray) or a Spark master URL (--engine spark);"
        " default: a local one",
    )


def run(args: argparse.Namespace, environ: MutableMapping[str, str], cpus: int, err: TextIO) -> int:
    """Score the inputs named by ``args``; the settings come from ``environ`` as the endpoint's
    do (selectable outputs, payload limit, batch strategy), with batch mode always on."""
    from smserve.scoring.engine import Interrupted
    from smserve.scoring.inputs import discover
    from smserve.scoring.progress import Progress

    settings, plan, options = configure(args, environ, cpus)
    files = discover(args.inputs, args.output, settings.s3_endpoint_url)
    total = sum(size for item in files if (size := item.size) is not None) or None
    progress = Progress(err, total, err.isatty(), args.progress_every)
    try:
        summary = _engine(args, environ)(files, settings, plan, options, progress)
    except Interrupted:
        logger.warning("interrupted: finished outputs were kept; rerun with --skip-existing")
        return EXIT_INTERRUPTED
    logger.info("%s; %s", progress.finish(), summary.describe())
    return summary.exit_status


def configure(
    args: argparse.Namespace, environ: Mapping[str, str], cpus: int
) -> tuple[Settings, Plan, Run]:
    settings = Settings.from_env(environ)
    if settings.algorithm is not None:  # before any worker starts: ConfigError names the choices
        spec_for(settings.algorithm)
    changes = {"batch_mode": True, "model_dir": args.model_dir or settings.model_dir}
    if args.max_payload_mb is not None:
        changes["max_payload_bytes"] = args.max_payload_mb
    settings = settings.replace(**changes)
    plan = Plan(
        args.content_type, args.accept, args.split_type, args.assemble_with,
        args.join_source, args.on_error,
    )  # fmt: skip
    strategy = args.batch_strategy or _strategy(settings.batch_strategy)
    workers = args.workers or cpus
    run = Run(settings.max_payload_bytes, strategy, workers, args.skip_existing)
    return settings, plan, run


def _engine(args: argparse.Namespace, environ: MutableMapping[str, str]) -> Engine:
    """The engine's function; Spark may set what its local JVMs read in ``environ``."""
    if args.engine == "spark":
        from smserve.spark.engine import score_files_on_spark

        return functools.partial(score_files_on_spark, master=args.address, environ=environ)
    if args.engine == "ray":
        from smserve.scoring.ray.engine import score_files_on_ray

        return functools.partial(score_files_on_ray, address=args.address)
    from smserve.scoring.engine import score_files

    return score_files


def _strategy(environment_value: str) -> str:
    return "SingleRecord" if environment_value == "SINGLE_RECORD" else "MultiRecord"


def _choice(
    parser: argparse.ArgumentParser, flag: str, choices: tuple[str, ...], text: str
) -> None:
    default = choices[0]
    parser.add_argument(flag, choices=choices, default=default, help=f"{text} (default: {default})")


def _mib(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{value} must be above 0 and at most 100 (MiB)")
    return max(1, int(value * MIB))


def positive_integer(text: str) -> int:
    """argparse type: a whole number >= 1 (also used by ``smserve serve``'s flags)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
