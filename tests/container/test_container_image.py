"""The image definition without building it: the Dockerfile's contract facts, the requirements
list it installs from pyproject.toml, the build context, and the committed local_test data."""

from __future__ import annotations

import fnmatch
import glob
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.container.container_modules import CONTAINER, LOCAL_TEST, REPO, load

requirements = load(CONTAINER / "runtime_requirements.py")
DOCKERFILE = (REPO / "Dockerfile").read_text()


def instructions(name: str) -> list[str]:
    """Arguments of every ``name`` instruction (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [m.group(1).strip() for m in re.finditer(rf"(?m)^{name}\s+(.*)$", joined)]


def test_base_image_is_an_overridable_argument() -> None:
    assert DOCKERFILE.index("ARG BASE_IMAGE=python:3.11-slim") < DOCKERFILE.index("FROM")
    assert all(f.startswith("${BASE_IMAGE}") for f in instructions("FROM"))
    assert len(instructions("FROM")) >= 2, "multi-stage build expected"


def test_xgboost_is_cpu_only_by_default() -> None:
    assert "ARG XGBOOST_PACKAGE=xgboost-cpu" in DOCKERFILE
    assert '--replace "xgboost=${XGBOOST_PACKAGE}"' in DOCKERFILE


def test_entrypoint_is_exec_form_so_sigterm_reaches_the_server() -> None:
    [entrypoint] = instructions("ENTRYPOINT")
    assert json.loads(entrypoint) == ["smserve"]
    # No CMD: `docker run IMAGE` alone trains in a training job's layout, else exits 2.
    assert instructions("CMD") == []


def test_sagemaker_image_facts() -> None:
    labels = " ".join(instructions("LABEL"))
    assert "com.amazonaws.sagemaker.capabilities.accept-bind-to-port=true" in labels
    assert "com.amazonaws.sagemaker.capabilities.multi-models=true" in labels
    assert instructions("EXPOSE") == ["8080 8081"]  # HTTP, and gRPC (SMSERVE_GRPC_PORT)
    env = " ".join(instructions("ENV"))
    for setting in ("PATH=/opt/venv/bin:$PATH", "PYTHONUNBUFFERED=1", "SM_MODEL_DIR=/opt/ml/model"):
        assert setting in env
    assert "/opt/ml/model /opt/ml/models" in DOCKERFILE


def test_no_pip_cache_and_no_compilers_in_the_image() -> None:
    for run in instructions("RUN"):
        if " install " in run and "pip" in run and "setuptools" not in run:
            assert "--no-cache-dir" in run, run
    assert "build-essential" not in DOCKERFILE
    # Only the wheel stage has gcc (it compiles the fast XGBoost predictor's C extension); the
    # final image copies the built wheel and installs no compiler.
    final_stage = DOCKERFILE[DOCKERFILE.rindex("\nFROM ") :]
    assert "gcc" not in final_stage
    wheel_stage = DOCKERFILE[DOCKERFILE.index("AS wheel") : DOCKERFILE.rindex("\nFROM ")]
    assert "gcc" in wheel_stage


def test_wheel_is_installed_without_resolving_its_dependencies() -> None:
    wheel_installs = [r for r in instructions("RUN") if "/tmp/wheels/*.whl" in r]
    assert wheel_installs
    assert all("--no-deps" in r for r in wheel_installs)


def test_build_context_holds_what_the_dockerfile_copies() -> None:
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") :].count("*") == 1
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for copy in instructions("COPY"):
        if copy.startswith("--from"):
            continue
        for source in copy.split()[:-1]:
            pattern = source.rstrip("/")
            assert any(fnmatch.fnmatch(a, pattern) for a in allowed), f"COPY {source} is ignored"
            if not glob.has_magic(pattern):  # a glob may match nothing (README.m[d])
                assert (REPO / pattern).exists(), source


def project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        data: dict[str, object] = tomllib.load(handle)["project"]
    return data


def test_requirements_rename_xgboost_and_keep_everything_else() -> None:
    listed = requirements.runtime_requirements(project(), [], {"xgboost": "xgboost-cpu"})
    declared = project()["dependencies"]
    assert isinstance(declared, list)
    assert len(listed) == len(declared)
    for original, line in zip(declared, listed, strict=True):
        name, rest = requirements.split_name(original)
        expected = "xgboost-cpu" if name == "xgboost" else name
        assert line == expected + rest.rstrip()
    assert not any(re.match(r"xgboost\b(?!-)", line) for line in listed)


def test_requirements_add_extras_and_reject_unknown_ones() -> None:
    listed = requirements.runtime_requirements(project(), ["skops"], {})
    assert any(line.startswith("skops") for line in listed)
    with pytest.raises(ValueError, match="unknown extra"):
        requirements.runtime_requirements(project(), ["nope"], {})


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ("xgboost>=2.1", "xgboost-cpu>=2.1"),
        ("XGBoost[scikit-learn] >= 2.1 ; python_version >= '3.11'", None),
        ("xgboost_cpu>=3", "xgboost_cpu>=3"),
        ("numpy", "numpy"),
    ],
)
def test_replace_matches_normalized_names(requirement: str, expected: str | None) -> None:
    replaced = requirements.runtime_requirements(
        {"dependencies": [requirement]},
        [],
        requirements.parse_replacements(["xgboost=xgboost-cpu"]),
    )
    if expected is None:
        assert replaced == ["xgboost-cpu[scikit-learn] >= 2.1 ; python_version >= '3.11'"]
    else:
        assert replaced == [expected]


def test_requirements_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(REPO / "pyproject.toml"), "--replace", "xgboost=xgboost-cpu", "--extra", ""]
    assert requirements.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("xgboost-cpu") for line in out)
    assert requirements.main([str(REPO / "pyproject.toml"), "--replace", "bad"]) == 2


def test_hyperparameter_files_name_their_algorithm() -> None:
    config = LOCAL_TEST / "test_dir" / "input" / "config"
    for algorithm in ("xgboost", "kmeans"):
        values = json.loads((config / f"hyperparameters-{algorithm}.json").read_text())
        assert values["algorithm"] == algorithm
        assert all(isinstance(v, str) for v in values.values()), "SageMaker writes strings"
    channels = json.loads((config / "inputdataconfig.json").read_text())
    assert channels["train"]["ContentType"] == "text/csv"


def test_training_data_has_a_label_column_and_four_features() -> None:
    rows = np.loadtxt(LOCAL_TEST / "test_dir/input/data/train/train.csv", delimiter=",")
    assert rows.shape == (120, 5)
    assert set(np.unique(rows[:, 0])) == {0.0, 1.0}


def test_endpoint_checker_decodes_text_formats() -> None:
    check = load(LOCAL_TEST / "check_endpoint.py")
    names = ["closest_cluster", "distance_to_cluster"]
    expected = [{"closest_cluster": [1.0], "distance_to_cluster": [0.5]}]
    assert check.decode_csv(b"1,0.5\n", names) == expected
    assert check.decode_jsonlines(b'{"closest_cluster": 1, "distance_to_cluster": 0.5}\n', []) == (
        expected
    )
    body = b'{"predictions": [{"closest_cluster": 1.0, "distance_to_cluster": 0.5}]}'
    assert check.decode_json(body, []) == expected
    with pytest.raises(check.CheckFailed):
        check.decode_jsonlines(b'{"score": 1}', [])


def test_payload_extensions_cover_every_request_type() -> None:
    check = load(LOCAL_TEST / "check_endpoint.py")
    found = {check.EXTENSIONS[p.suffix] for p in (LOCAL_TEST / "payloads").iterdir()}
    assert found == {check.CSV, check.JSON, check.JSONLINES, check.LIBSVM, check.RECORDIO}


def test_generated_files_are_ignored_by_git() -> None:
    ignored = (REPO / ".gitignore").read_text().splitlines()
    assert "/local_test/test_dir/model/" in ignored
    assert "/local_test/test_dir/output/" in ignored
    assert not Path(LOCAL_TEST / "test_dir" / "model").is_file()
