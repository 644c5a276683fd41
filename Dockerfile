# smserve: a SageMaker-compatible inference (and training) image for k-means and XGBoost.
#
#   docker build -t smserve .                                   # CPU-only XGBoost (default)
#   docker build -t smserve:gpu --build-arg XGBOOST_PACKAGE=xgboost .   # CUDA-capable XGBoost
#   docker run IMAGE serve | docker run IMAGE train | docker run IMAGE   (trains inside a training
#   job's layout, /opt/ml/input/config/hyperparameters.json present; elsewhere usage, exit 2)
#
# Build arguments:
#   BASE_IMAGE       any Debian-like image with Python >= 3.11, `python` and `pip` on PATH
#   XGBOOST_PACKAGE  xgboost-cpu (default: CPU only, no CUDA runtime or NCCL) or xgboost (GPU)
#   SMSERVE_EXTRAS   optional extras from pyproject.toml to install too, e.g. "skops" (the
#                    `grpc` extra, the Open Inference Protocol over gRPC, is always installed)
#
# Dependency solution. pyproject.toml declares `xgboost`, and on Linux that wheel drags in the
# CUDA-enabled library plus nvidia-nccl (hundreds of MB). The CPU-only build ships as a different
# distribution, `xgboost-cpu`, that installs the same `xgboost` import package. So the image never
# lets pip resolve smserve's own metadata: the `requirements` stage turns [project].dependencies
# into a requirements list with `xgboost` renamed to $XGBOOST_PACKAGE (container/
# runtime_requirements.py, standard library only, keeps every version specifier), the `deps`
# stage installs that list into /opt/venv, and the final stage installs the smserve wheel with
# --no-deps. pyproject.toml stays the single source of truth, and the big dependency layer is
# cached until the dependency list itself changes, not on every source or pyproject edit.
# Versions: every install is constrained by container/requirements.lock (pins for all variants
# and the build tools, generated from pyproject.toml by `.venv/bin/python container/
# lock_requirements.py`), so rebuilding later gives the same packages.
#
# Size: no compilers, no pip cache (--no-cache-dir), no pip or setuptools in /opt/venv (the base
# image's pip installs into it with --python), and the dependencies' own test suites (`tests`
# packages, ~65 MB of numpy/scipy/scikit-learn, never imported at run time) are deleted; so are
# pyarrow's C++ headers, Cython sources and Arrow Flight (an RPC framework nothing here
# imports; nothing else links it), about 39 MB. Byte code
# is compiled at install time (pip's default) and kept, so workers do not compile at startup.
# A derived image adds packages with the base pip: `RUN pip --python /opt/venv/bin/python install X`.

ARG BASE_IMAGE=python:3.11-slim

# --- requirements: pyproject.toml -> requirements.txt (cheap; re-runs on any pyproject edit) ---
FROM ${BASE_IMAGE} AS requirements
ARG XGBOOST_PACKAGE=xgboost-cpu
ARG SMSERVE_EXTRAS=""
WORKDIR /build
COPY pyproject.toml container/runtime_requirements.py ./
RUN python runtime_requirements.py pyproject.toml \
        --replace "xgboost=${XGBOOST_PACKAGE}" --extra grpc --extra "${SMSERVE_EXTRAS}" \
        > requirements.txt \
    && cat requirements.txt

# --- deps: the runtime dependencies in /opt/venv. Keyed on the generated list's content, so
# edits to pyproject.toml that leave the dependencies alone (tool settings, version) reuse it. ---
FROM ${BASE_IMAGE} AS deps
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
COPY --from=requirements /build/requirements.txt /tmp/requirements.txt
COPY container/requirements.lock /tmp/requirements.lock
RUN python -m venv --without-pip /opt/venv \
    && python -m pip --python /opt/venv/bin/python install --no-cache-dir \
        -r /tmp/requirements.txt -c /tmp/requirements.lock \
    && find /opt/venv -depth -type d -name tests -path "*/site-packages/*" -exec rm -rf {} + \
    && pa=$(echo /opt/venv/lib/python3*/site-packages/pyarrow) \
    && rm -rf "$pa/include" "$pa"/libarrow_flight.so* "$pa"/libarrow_python_flight.so* \
        "$pa"/_flight*.so "$pa/flight.py" \
    && find "$pa" \( -name "*.pxd" -o -name "*.pyx" -o -name "*.h" \) -delete \
    && /opt/venv/bin/python -c "import flask, gunicorn, numpy, scipy.sparse, sklearn.cluster, xgboost, google.protobuf, grpc, orjson, pyarrow.parquet, pyarrow.csv, pyarrow.ipc; from pyarrow.fs import S3FileSystem"

# --- wheel: build the smserve wheel (no dependencies resolved here). Its three C extensions, the
# fast XGBoost predictor (src/smserve/algorithms/xgboost/_fast.c), the UBJSON decoder of the
# load-time model checks (_ubjson.c) and the hold of multi-host training's sockets to the host's
# address (src/smserve/training/_collective_address.c), are compiled here with the base image's Python headers; gcc stays in this stage, the final image gets the .so only.
# A base whose Python is Debian's own (local_test/container_engine.sh's stand-in for
# python:3.11-slim, Debian-like BASE_IMAGEs) has no headers until python3-dev is installed;
# without them setuptools skips the optional extensions and the final stage's import check
# fails. ---
FROM ${BASE_IMAGE} AS wheel
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
COPY container/requirements.lock /tmp/requirements.lock
# Python's headers: the official python images ship them beside their own interpreter; a base
# whose Python is Debian's (python3) needs libpython3-dev for them.
RUN headers="$(python -c 'import sysconfig; print(sysconfig.get_config_var("INCLUDEPY"))')" \
    && extra="$([ -f "$headers/Python.h" ] || echo libpython3-dev)" \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        gcc libc6-dev $extra \
    && rm -rf /var/lib/apt/lists/* \
    && [ -f "$headers/Python.h" ]
RUN python -m venv /opt/build \
    && /opt/build/bin/pip install -c /tmp/requirements.lock "setuptools>=77" wheel
WORKDIR /build
# README.m[d]: the readme is optional for the build (a glob that matches nothing copies nothing).
COPY pyproject.toml README.m[d] ./
COPY src ./src
# The extensions are optional for a source install, not for the image: the build fails here if
# the wheel came out without any of them.
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
    && /opt/build/bin/python -c "import glob, sys, zipfile; names = zipfile.ZipFile(glob.glob('/wheels/*.whl')[0]).namelist(); sys.exit(not all(any(n.startswith(f'smserve/{e}') and n.endswith('.so') for n in names) for e in ('algorithms/xgboost/_fast', 'algorithms/xgboost/_ubjson', 'training/_collective_address')))"

# --- final image ---
FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="smserve" \
      org.opencontainers.image.description="SageMaker-compatible inference container for k-means and XGBoost" \
      org.opencontainers.image.licenses="Apache-2.0" \
      com.amazonaws.sagemaker.capabilities.accept-bind-to-port=true \
      com.amazonaws.sagemaker.capabilities.multi-models=true
# nginx in front of gunicorn (smserve.frontend): it reads whole requests, times out slow and
# stalled clients and enforces the payload limit before a worker sees anything. nginx-light is
# Debian's smallest build (about 3 MB); its packaged site and service files are not used.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/* \
    && nginx -v
COPY --from=deps /opt/venv /opt/venv
COPY --from=wheel /wheels /tmp/wheels
# `python` here is still the base image's interpreter (PATH is set below), whose pip installs
# into the pip-less /opt/venv.
RUN python -m pip --python /opt/venv/bin/python install --no-cache-dir --no-deps \
        --disable-pip-version-check --root-user-action=ignore /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels \
    && mkdir -p /opt/ml/model /opt/ml/models /opt/ml/input /opt/ml/output \
    && /opt/venv/bin/smserve --help >/dev/null \
    && /opt/venv/bin/python -c "import smserve.algorithms.xgboost._fast, smserve.algorithms.xgboost._ubjson, smserve.training._collective_address"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SM_MODEL_DIR=/opt/ml/model
WORKDIR /opt/ml
# 8080: HTTP (SageMaker, TF Serving REST, V2 REST); 8081: the Open Inference Protocol over gRPC
EXPOSE 8080 8081
# Exec form, no shell: `docker run IMAGE serve` runs `smserve serve` as PID 1, so SageMaker's
# SIGTERM reaches the server directly (it drains, then exits before the SIGKILL 30 s later).
# No CMD: `docker run IMAGE` alone (the SageMaker SDK v3's ModelTrainer in local mode) runs
# `smserve` with no command, which trains inside a training job's layout and otherwise prints
# the usage and exits 2.
ENTRYPOINT ["smserve"]
