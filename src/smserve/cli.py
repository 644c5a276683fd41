"""The command line: ``smserve serve|train|score|model``, and the ``serve``/``train`` executables
SageMaker runs (``docker run IMAGE serve``; ``docker run IMAGE score ...`` scores offline). It
reads the environment once into Settings, applies flag overrides and passes them down; it is the
only module that prints.

No command at all (``docker run IMAGE``, which is what the SageMaker SDK v3's ``ModelTrainer``
runs in local mode) trains when SageMaker's training layout is there (``hyperparameters.json``
in the training config folder), as SageMaker itself would run ``IMAGE train``; anywhere else
it prints the usage and exits 2.

Exit status: 0 for a clean stop or ``--help``; 2 for a usage error (no command outside a
training job among them), bad configuration or a model that cannot be loaded; otherwise
gunicorn's status (3: a worker failed to boot), training's, or scoring's (listed in
``smserve.scoring.command``)."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smserve import __version__
from smserve.algorithms import catalog
from smserve.config import Settings, TrainingSettings
from smserve.config.reader import Reader
from smserve.errors import ClientError, ConfigError, FrontEndError, StartupError
from smserve.scoring import command as score_command

EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """``smserve``: parse ``argv`` (default: sys.argv[1:]) and run the chosen command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return _no_command(parser, args)
    command: Callable[[argparse.Namespace], int] = args.run
    return command(args)


def serve_main() -> int:
    """The ``serve`` executable: ``smserve serve`` with the same arguments."""
    return main(["serve", *sys.argv[1:]])


def train_main() -> int:
    """The ``train`` executable: ``smserve train``."""
    return main(["train", *sys.argv[1:]])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smserve", description="SageMaker-style inference server for k-means and XGBoost."
    )
    parser.add_argument("--version", action="version", version=f"smserve {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve /ping and /invocations with gunicorn")
    serve.add_argument(
        "--demo",
        nargs="?",
        const=catalog.DEFAULT.name,
        choices=catalog.with_demo(),
        help=f"serve a demo model trained on first start (default kind: {catalog.DEFAULT.name})",
    )
    serve.add_argument(
        "--port", type=score_command.positive_integer, help="listen port (SAGEMAKER_BIND_TO_PORT)"
    )
    serve.add_argument(
        "--workers",
        type=score_command.positive_integer,
        help="worker processes (SAGEMAKER_MODEL_SERVER_WORKERS)",
    )
    serve.add_argument(
        "--model_config_file",
        type=Path,
        help="TF Serving model config, text format (SMSERVE_MODEL_CONFIG_FILE)",
    )
    serve.add_argument(
        "--file_system_poll_wait_seconds",
        type=float,
        help="seconds between polls for new versions; 0 disables polling "
        "(SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS)",
    )
    serve.set_defaults(run=_serve)
    train = commands.add_parser("train", help="train from /opt/ml/input (SageMaker training)")
    train.set_defaults(run=_train)
    score = commands.add_parser("score", help="score files offline, as Batch Transform does")
    score_command.add_arguments(score)
    score.set_defaults(run=_score)
    _add_model_command(commands)
    return parser


def _add_model_command(commands: Any) -> None:
    model = commands.add_parser("model", help="inspect an XGBoost model file, or upgrade it")
    actions = model.add_subparsers(dest="action", metavar="ACTION", required=True)
    inspect = actions.add_parser("inspect", help="print its format, era, booster, objective, ...")
    inspect.add_argument("path", type=Path)
    upgrade = actions.add_parser("upgrade", help="write it as UBJSON, checked to predict the same")
    upgrade.add_argument("path", type=Path)
    upgrade.add_argument("out", type=Path)
    for parser in (inspect, upgrade):
        parser.add_argument(
            "--allow-pickle", action="store_true", help="as SMSERVE_ALLOW_PICKLE=true"
        )
        parser.set_defaults(run=_model)


def _serve(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
    except ConfigError as exc:
        return _fail(f"invalid configuration: {exc}")
    _configure_logging(settings)
    # Here, not at the top: training never needs it (multiprocessing: 10 ms of a job's start).
    from smserve.http import process

    logging.getLogger("smserve").info(
        "sizing from %s: %d workers x %d threads, %d MiB per request",
        settings.resources_note,
        settings.workers,
        settings.threads,
        settings.request_memory_bytes // 2**20,
    )
    process.tune_malloc(os.environ)  # before any thread starts
    process.limit_native_threads(settings, os.environ, settings.cpu_count)
    try:
        return _start(settings, args.demo)
    except ConfigError as exc:
        return _fail(f"invalid configuration: {exc}")
    except FrontEndError as exc:
        return _fail(f"cannot start: {exc}")
    except StartupError as exc:
        return _fail(f"cannot load model: {exc}")


def _start(settings: Settings, demo_kind: str | None) -> int:
    # Imported here, after the thread caps are in the environment: both load numpy. The demo
    # module only for --demo: it imports scikit-learn (0.9 s, and pandas), which every worker
    # would inherit.
    from smserve import door_table
    from smserve.http import server

    # the doors' own settings, and no setting on a path the server answers
    settings = door_table.read_settings(settings, os.environ)
    if demo_kind is not None:
        from smserve import demo

        settings = settings.replace(
            model_dir=demo.model_dir(demo_kind, settings), algorithm=demo_kind
        )
        from smserve.http import process

        # Training runs OpenMP code, after which this process could not fork workers.
        process.call_in_child(demo.prepare, demo_kind, settings)
    return server.run(settings)


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env(os.environ)
    overrides = {
        "port": args.port,
        "workers": args.workers,
        "model_config_file": args.model_config_file,
        "poll_interval_s": args.file_system_poll_wait_seconds,
    }
    return settings.replace(**{k: v for k, v in overrides.items() if v is not None})


def _score(args: argparse.Namespace) -> int:
    # The exit statuses are listed in smserve.scoring.command; 2 is a usage or model error.
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        return _fail(f"invalid configuration: {exc}")
    _configure_logging(settings)
    from smserve.http import process

    process.tune_malloc(os.environ)  # before any thread starts; forked workers inherit it
    workers = args.workers or settings.cpu_count
    process.limit_native_threads(settings.replace(workers=workers), os.environ, settings.cpu_count)
    try:
        return score_command.run(args, os.environ, settings.cpu_count, sys.stderr)
    except (StartupError, ClientError) as exc:
        return _fail(str(exc))


def _model(args: argparse.Namespace) -> int:
    # Imported here: the other commands never need it.
    from smserve.algorithms.xgboost import upgrade

    try:
        if args.action == "inspect":
            report = upgrade.inspect(args.path, args.allow_pickle)[0]
        else:
            report = upgrade.upgrade(args.path, args.out, args.allow_pickle)
    except StartupError as exc:
        return _fail(str(exc))
    print("\n".join(report.lines()))
    if args.action == "upgrade":
        print(f"written:        {args.out} (UBJSON; predicts the same on probe rows)")
    return 0


def _no_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Train inside a training job's layout; elsewhere the usage, to stderr, and exit 2."""
    layout = TrainingSettings.layout(Reader(os.environ))
    hyperparameters = layout["config_dir"] / "hyperparameters.json"
    if hyperparameters.is_file():
        print(f"smserve: no command; {hyperparameters} is there: training", file=sys.stderr)
        return _train(args)
    parser.print_help(sys.stderr)
    return _fail(
        f"a command is needed (no training job here: {hyperparameters} does not exist); "
        "serve, train, score or model"
    )


def _train(args: argparse.Namespace) -> int:
    # Imported here so that serving never imports the training code.
    from smserve import training

    # This process is the job: what it has imported lives until it ends, so out of the cyclic
    # collector's reach (as in a serving worker), and the interpreter's full collections at
    # exit skip it.
    gc.freeze()
    return training.run(os.environ)


def _configure_logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _fail(message: str) -> int:
    print(f"smserve: {message}", file=sys.stderr)
    return EXIT_USAGE
