#!/usr/bin/env bash
# Build the smserve image and push it to Amazon ECR.
#
#   container/build_and_push.sh IMAGE_NAME [REGION]
#
#   IMAGE_NAME  ECR repository name, optionally with a tag (smserve or smserve:1.0; default tag
#               latest). The repository is created when it does not exist.
#   REGION      AWS region; default: `aws configure get region`, then $AWS_REGION, then us-west-2.
#
# Extra `docker build` arguments can be passed in DOCKER_BUILD_ARGS, e.g.
#   DOCKER_BUILD_ARGS="--build-arg XGBOOST_PACKAGE=xgboost" container/build_and_push.sh smserve:gpu
# Needs the AWS CLI v2 and credentials allowed to call sts:GetCallerIdentity and ECR.
# Prints the pushed image URI last.
set -euo pipefail

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
case "$1" in -h | --help) usage ;; esac

name="${1%%:*}"
tag="latest"
if [[ "$1" == *:* ]]; then tag="${1#*:}"; fi
if [ -z "$name" ] || [ -z "$tag" ]; then usage; fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

region="${2:-}"
if [ -z "$region" ]; then region="$(aws configure get region 2>/dev/null || true)"; fi
region="${region:-${AWS_REGION:-us-west-2}}"

echo "build_and_push: resolving the AWS account"
account="$(aws sts get-caller-identity --query Account --output text)"
if [ -z "$account" ] || [ "$account" = "None" ]; then
  echo "build_and_push: could not resolve the AWS account (are credentials configured?)" >&2
  exit 1
fi

# China regions use a different domain.
domain="amazonaws.com"
if [[ "$region" == cn-* ]]; then domain="amazonaws.com.cn"; fi
registry="${account}.dkr.ecr.${region}.${domain}"
image_uri="${registry}/${name}:${tag}"

if ! aws ecr describe-repositories --region "$region" --repository-names "$name" >/dev/null 2>&1; then
  echo "build_and_push: creating ECR repository ${name} in ${region}"
  aws ecr create-repository --region "$region" --repository-name "$name" \
    --image-scanning-configuration scanOnPush=true >/dev/null
fi

echo "build_and_push: logging in to ${registry}"
aws ecr get-login-password --region "$region" \
  | docker login --username AWS --password-stdin "$registry"

echo "build_and_push: building ${name}:${tag} from ${repo_root}"
# shellcheck disable=SC2086  # DOCKER_BUILD_ARGS is a list of words on purpose
docker build ${DOCKER_BUILD_ARGS:-} -t "${name}:${tag}" "$repo_root"

echo "build_and_push: pushing ${image_uri}"
docker tag "${name}:${tag}" "$image_uri"
docker push "$image_uri"

echo "$image_uri"
