#!/usr/bin/env bash
# A Docker-compatible engine for machines that have the docker CLI but no engine (CI sandboxes,
# this project's build machines): podman (with runc) answering the Docker API on a unix socket,
# Debian's docker-compose (what the SageMaker SDK's local mode runs), catatonit (the init of the
# infra container `podman kube play` starts for a pod), and, because no image
# registry may be reachable, a local stand-in for the python:3.11-slim base image built with
# debootstrap from Debian bookworm's own packages (Python 3.11, as in the official image).
#
#   eval "$(bash local_test/container_engine.sh)"    # as root; prints the export line
#   docker build -t smserve .                          # FROM python:3.11-slim resolves locally
#
# Safe to run again: installed pieces, the base image and a running service are kept, so later
# runs take a second. The first run takes a few minutes (apt, debootstrap). Everything it writes
# lives under /etc/containers, /var/lib/containers, /var/tmp/smserve-engine and the socket.
# The service's PID is kept in /var/tmp/smserve-engine/service.pid: a wedged service is stopped
# by that PID, never by a name pattern.
# Environment: SMSERVE_ENGINE_SOCKET (default /run/smserve-podman.sock), SMSERVE_DEBIAN_MIRROR.
set -euo pipefail

socket="${SMSERVE_ENGINE_SOCKET:-/run/smserve-podman.sock}"
mirror="${SMSERVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
base_image="docker.io/library/python:3.11-slim"
state=/var/tmp/smserve-engine
pid_file="$state/service.pid"

say() { printf 'container_engine: %s\n' "$*" >&2; }
die() { say "FATAL: $*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

install_packages() {
  local missing=()
  have podman || missing+=(podman)
  have runc || missing+=(runc)
  have debootstrap || missing+=(debootstrap)
  have docker-compose || missing+=(docker-compose)
  have catatonit || [ -x /usr/libexec/podman/catatonit ] || missing+=(catatonit)
  [ "${#missing[@]}" -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "installing ${missing[*]} needs root"
  say "installing ${missing[*]} (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" uidmap slirp4netns fuse-overlayfs ca-certificates >/dev/null
}

configure_podman() {
  # Sandboxes like this one refuse rlimit changes and use cgroup v1 without systemd: runc
  # with the cgroupfs manager and no default ulimits works in both, and on ordinary hosts.
  mkdir -p /etc/containers
  cat >/etc/containers/containers.conf <<'CONF'
# written by smserve local_test/container_engine.sh
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
}

build_base_image() {
  podman image exists "$base_image" && return
  local rootfs="$state/rootfs"
  say "building a stand-in for $base_image from Debian bookworm packages (debootstrap)"
  mkdir -p "$state"
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$state/debootstrap.log" 2>&1 \
    || die "debootstrap failed; see $state/debootstrap.log"
  # What the official image offers that images built FROM it rely on: `python` on PATH and a
  # pip allowed to install outside a venv (Debian marks its python externally managed).
  ln -sf python3 "$rootfs/usr/bin/python"
  rm -f "$rootfs"/usr/lib/python3.*/EXTERNALLY-MANAGED
  # This machine's CA bundle, so pip inside a build trusts the same (proxied) index it does.
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["python3"]' \
    - "$base_image" >/dev/null
  rm -rf "$rootfs"
}

answers() { curl -fs --max-time 2 --unix-socket "$socket" http://engine/_ping 2>/dev/null | grep -q OK; }
# A long-running service can answer /_ping yet fail every attach ("unable to upgrade to tcp,
# received 409"); running one container through it tells a working service from a wedged one.
attaches() {
  DOCKER_HOST="unix://$socket" timeout 60 docker run --rm "$base_image" true >/dev/null 2>&1
}

# is_our_service PID: PID is alive and is the podman service on this socket (not a reused PID).
is_our_service() {
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == "podman system service "*"unix://$socket"* ]]
}

# Stops the service this script started, by the PID it recorded; waits up to 10 s for it.
stop_service() {
  local pid _
  pid="$(cat "$pid_file" 2>/dev/null)" || pid=""
  is_our_service "$pid" \
    || die "the service on $socket was not started by this script (no live PID in $pid_file); stop it yourself"
  kill "$pid"
  for _ in $(seq 50); do
    is_our_service "$pid" || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

start_service() {
  if answers; then
    attaches && return
    say "the service on $socket answers but cannot run a container: restarting it"
    stop_service
  fi
  mkdir -p "$state"
  rm -f "$socket"
  say "starting podman's Docker API service on $socket"
  # setsid execs podman in place (a background job is no group leader), so $! is its PID.
  setsid podman system service --time=0 "unix://$socket" >"$state/service.log" 2>&1 </dev/null &
  echo "$!" >"$pid_file"
  local _
  for _ in $(seq 100); do
    if answers; then
      is_our_service "$(cat "$pid_file")" || die "$socket answers, but not from the PID in $pid_file"
      return
    fi
    sleep 0.2
  done
  die "the Docker API on $socket did not answer; see $state/service.log"
}

install_packages
configure_podman
build_base_image
start_service
DOCKER_HOST="unix://$socket" docker info >/dev/null 2>&1 || die "docker info fails against $socket"
# podman's Docker API has no BuildKit: the CLI must use the classic builder.
echo "export DOCKER_HOST=unix://$socket DOCKER_BUILDKIT=0"
