#!/usr/bin/env bash
# Send one payload file to a running server's /invocations and print the answer.
#
#   local_test/predict.sh PAYLOAD [CONTENT_TYPE] [ACCEPT]
#
#   CONTENT_TYPE  default: from the extension (.csv text/csv, .json application/json,
#                 .jsonl application/jsonlines, .libsvm text/libsvm,
#                 .pbr/.recordio application/x-recordio-protobuf); "" also means that.
#   ACCEPT        default: none (the server answers in its default type).
#   URL           environment override of the server (default http://localhost:8080).
# The status line and response Content-Type go to stderr; the body to stdout (binary bodies are
# shown as a hex dump when stdout is a terminal). Exits 1 on an HTTP error status.
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 3 ]; then usage; fi
case "$1" in -h | --help) usage ;; esac

payload="$1"
content_type="${2:-}"
accept="${3:-}"
url="${URL:-http://localhost:8080}"
[ -f "$payload" ] || { echo "predict: no such file: $payload" >&2; exit 2; }

if [ -z "$content_type" ]; then
  case "$payload" in
    *.csv) content_type="text/csv" ;;
    *.json) content_type="application/json" ;;
    *.jsonl | *.jsonlines) content_type="application/jsonlines" ;;
    *.libsvm | *.svm) content_type="text/libsvm" ;;
    *.pbr | *.recordio | *.protobuf) content_type="application/x-recordio-protobuf" ;;
    *) content_type="text/csv" ;;
  esac
fi

body="$(mktemp)"
trap 'rm -f "$body"' EXIT
headers=(-H "Content-Type: $content_type")
if [ -n "$accept" ]; then headers+=(-H "Accept: $accept"); fi

echo "predict: POST $url/invocations  Content-Type: $content_type${accept:+  Accept: $accept}" >&2
result="$(curl -sS -o "$body" -w '%{http_code} %{content_type}' \
  "${headers[@]}" --data-binary "@$payload" "$url/invocations")" \
  || { echo "predict: no answer from $url (is serve_local.sh running?)" >&2; exit 1; }
code="${result%% *}"
type="${result#* }"
echo "predict: HTTP $code  Content-Type: ${type:-none}" >&2

if [[ "$type" == application/x-recordio-protobuf* ]] && [ -t 1 ]; then
  od -A d -t x1 "$body"
else
  cat "$body"
fi
[ "$code" -lt 400 ] || exit 1
