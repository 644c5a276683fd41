"""The shell scripts of container/ and local_test/, run with stub `aws`, `docker` and `curl`
executables that record their arguments (no engine, no AWS account needed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.container.container_modules import CONTAINER, LOCAL_TEST, REPO

SCRIPTS = sorted([*CONTAINER.glob("*.sh"), *LOCAL_TEST.glob("*.sh")])
BASH = shutil.which("bash") or "/bin/bash"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_script_parses_and_is_strict(script: Path) -> None:
    subprocess.run([BASH, "-n", str(script)], check=True)
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert os.access(script, os.X_OK), f"{script} is not executable"


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_scripts_pass_shellcheck() -> None:
    subprocess.run(["shellcheck", "--severity=warning", *map(str, SCRIPTS)], check=True)


def stub(bin_dir: Path, name: str, body: str) -> None:
    """An executable ``name`` that appends its arguments to $STUB_LOG, then runs ``body``."""
    path = bin_dir / name
    path.write_text(f'#!/usr/bin/env bash\necho "{name} $*" >> "$STUB_LOG"\n{body}\n')
    path.chmod(0o755)


def run(
    script: Path, args: list[str], bin_dir: Path, log: Path, **env: str
) -> tuple[int, str, str]:
    environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log), **env}
    done = subprocess.run(
        [BASH, str(script), *args], capture_output=True, text=True, env=environ, timeout=60
    )
    return done.returncode, done.stdout, done.stderr


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


AWS_STUB = """
case "$1 $2" in
  "sts get-caller-identity") echo 123456789012 ;;
  "ecr describe-repositories") [ -n "${REPO_EXISTS:-}" ] || exit 254 ;;
  "ecr get-login-password") echo secret-token ;;
  "configure get") exit 1 ;;
esac
"""


def test_build_and_push_creates_the_repository_and_pushes(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    stub(bin_dir, "aws", AWS_STUB)
    stub(bin_dir, "docker", 'if [ "$1" = login ]; then cat > /dev/null; fi')
    script = CONTAINER / "build_and_push.sh"

    code, out, err = run(script, ["smserve:1.2", "eu-west-1"], bin_dir, log)

    assert code == 0, err
    uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/smserve:1.2"
    assert out.strip().splitlines()[-1] == uri
    made = calls(log)
    assert any(c.startswith("aws ecr create-repository --region eu-west-1") for c in made)
    assert "docker login --username AWS --password-stdin 123456789012.dkr.ecr." in "\n".join(made)
    docker = [c for c in made if c.startswith("docker")]
    assert docker[1] == f"docker build -t smserve:1.2 {REPO}"
    assert docker[2:] == [f"docker tag smserve:1.2 {uri}", f"docker push {uri}"]


def test_build_and_push_reuses_a_repository(bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    stub(bin_dir, "aws", AWS_STUB)
    stub(bin_dir, "docker", 'if [ "$1" = login ]; then cat > /dev/null; fi')

    code, out, err = run(
        CONTAINER / "build_and_push.sh",
        ["smserve"],
        bin_dir,
        log,
        REPO_EXISTS="1",
        AWS_REGION="ap-south-1",
        DOCKER_BUILD_ARGS="--build-arg XGBOOST_PACKAGE=xgboost",
    )

    assert code == 0, err
    assert out.strip().endswith("123456789012.dkr.ecr.ap-south-1.amazonaws.com/smserve:latest")
    made = calls(log)
    assert not any("create-repository" in c for c in made)
    assert f"docker build --build-arg XGBOOST_PACKAGE=xgboost -t smserve:latest {REPO}" in made


def test_build_and_push_without_arguments_prints_usage(bin_dir: Path, tmp_path: Path) -> None:
    code, _, err = run(CONTAINER / "build_and_push.sh", [], bin_dir, tmp_path / "calls.log")
    assert code == 2
    assert "IMAGE_NAME" in err


@pytest.fixture
def test_dir(tmp_path: Path) -> Path:
    path = tmp_path / "test_dir"
    shutil.copytree(LOCAL_TEST / "test_dir" / "input", path / "input")
    (path / "model").mkdir()
    (path / "model" / "stale-model.json").write_text("{}")
    return path


@pytest.mark.parametrize("algorithm", ["xgboost", "kmeans"])
def test_train_local_mounts_the_algorithms_hyperparameters(
    algorithm: str, bin_dir: Path, tmp_path: Path, test_dir: Path
) -> None:
    log = tmp_path / "calls.log"
    stub(bin_dir, "docker", "")

    code, out, err = run(
        LOCAL_TEST / "train_local.sh", ["img:1", algorithm], bin_dir, log, TEST_DIR=str(test_dir)
    )

    assert code == 0, err
    hyperparameters = test_dir / "input" / "config" / f"hyperparameters-{algorithm}.json"
    run_call, remove_call = calls(log)
    name = re.fullmatch(r"docker rm -f (smserve-train-\d+)", remove_call)
    assert name is not None, remove_call
    assert run_call == (
        f"docker run --name {name.group(1)} -v {test_dir}:/opt/ml "
        f"-v {hyperparameters}:/opt/ml/input/config/hyperparameters.json:ro img:1 train"
    )
    assert list((test_dir / "model").iterdir()) == []  # emptied before training
    assert (test_dir / "output").is_dir()


def test_train_local_shows_the_failure_file(bin_dir: Path, tmp_path: Path, test_dir: Path) -> None:
    stub(bin_dir, "docker", 'echo "bad hyperparameter: eta" > "$TEST_DIR/output/failure"; exit 255')

    code, _, err = run(
        LOCAL_TEST / "train_local.sh", ["img"], bin_dir, tmp_path / "l", TEST_DIR=str(test_dir)
    )

    assert code == 255
    assert "bad hyperparameter: eta" in err


def test_train_local_rejects_an_unknown_algorithm(bin_dir: Path, test_dir: Path) -> None:
    code, _, err = run(
        LOCAL_TEST / "train_local.sh",
        ["img", "svm"],
        bin_dir,
        test_dir / "l",
        TEST_DIR=str(test_dir),
    )
    assert code == 2
    assert "kmeans" in err
    assert "xgboost" in err


def test_serve_local_publishes_8080_and_passes_options(
    bin_dir: Path, tmp_path: Path, test_dir: Path
) -> None:
    log = tmp_path / "calls.log"
    stub(bin_dir, "docker", "")

    code, _, err = run(
        LOCAL_TEST / "serve_local.sh",
        ["img", "-e", "SMSERVE_THREADS=2"],
        bin_dir,
        log,
        TEST_DIR=str(test_dir),
    )

    assert code == 0, err
    assert calls(log) == [
        f"docker run --rm --stop-timeout 30 -v {test_dir}:/opt/ml -p 8080:8080 "
        "-e SMSERVE_THREADS=2 img serve"
    ]


CURL_STUB = """
out=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift ;; esac
  shift
done
printf '0.5\\n' > "$out"
printf '%s' "${CURL_ANSWER:-200 text/csv; charset=utf-8}"
"""


@pytest.mark.parametrize(
    ("payload", "content_type"),
    [
        ("dense.csv", "text/csv"),
        ("dense.json", "application/json"),
        ("sparse.json", "application/json"),
        ("dense.jsonl", "application/jsonlines"),
        ("sparse.libsvm", "text/libsvm"),
        ("dense.pbr", "application/x-recordio-protobuf"),
    ],
)
def test_predict_guesses_the_content_type(
    payload: str, content_type: str, bin_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    stub(bin_dir, "curl", CURL_STUB)
    path = LOCAL_TEST / "payloads" / payload

    code, out, err = run(LOCAL_TEST / "predict.sh", [str(path), "", "text/csv"], bin_dir, log)

    assert code == 0, err
    assert out == "0.5\n"
    [call] = calls(log)
    assert f"-H Content-Type: {content_type} -H Accept: text/csv" in call
    assert f"--data-binary @{path} http://localhost:8080/invocations" in call


def test_predict_fails_on_an_error_status(bin_dir: Path, tmp_path: Path) -> None:
    stub(bin_dir, "curl", CURL_STUB)
    code, _, err = run(
        LOCAL_TEST / "predict.sh",
        [str(LOCAL_TEST / "payloads" / "dense.csv"), "image/png"],
        bin_dir,
        tmp_path / "calls.log",
        CURL_ANSWER="415 application/json",
    )
    assert code == 1
    assert "HTTP 415" in err
