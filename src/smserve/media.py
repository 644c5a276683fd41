"""Media types: the one place their strings live, header parsing, and Accept negotiation.

It knows nothing of codecs or algorithms; callers pass the offers they have. Headers are
parsed here (RFC 9110's ``type/subtype *( OWS ";" OWS parameter )``), not by Werkzeug: its
import brings its development server and test client (28 ms of a training job's start), and
training and scoring need no more of it than this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from smserve.errors import NotAcceptable, UnsupportedMediaType

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
RECORDIO = "application/x-recordio-protobuf"
LIBSVM = "text/libsvm"
PARQUET = "application/x-parquet"  # the built-in XGBoost's name for a whole Parquet file
ARROW_STREAM = "application/vnd.apache.arrow.stream"  # Arrow IPC streaming format
ARROW_FILE = "application/vnd.apache.arrow.file"  # Arrow IPC file (random-access) format
OCTET_STREAM = "application/octet-stream"  # V2 bodies with binary tensors (Triton)
NPY = "application/x-npy"  # one NumPy .npy array (the SageMaker SDK's NumpySerializer)
# The formats the server reads (request bodies), as the metrics label them.
READABLE = frozenset(
    {CSV, JSON, JSONLINES, RECORDIO, LIBSVM, PARQUET, ARROW_STREAM, ARROW_FILE, OCTET_STREAM, NPY}
)
TEXT = "text/plain"  # TF Serving's metrics page
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus's text format

# Other spellings clients send for the same formats (the built-in XGBoost container's short
# names among them). Keys and values are lower-case essences.
ALIASES: Mapping[str, str] = {
    "csv": CSV,
    "text/x-csv": CSV,
    "application/csv": CSV,
    "json": JSON,
    "text/json": JSON,
    "jsonlines": JSONLINES,
    "application/x-jsonlines": JSONLINES,
    "application/jsonl": JSONLINES,
    "application/x-ndjson": JSONLINES,
    "libsvm": LIBSVM,
    "text/x-libsvm": LIBSVM,
    "recordio-protobuf": RECORDIO,
    "application/recordio-protobuf": RECORDIO,
    "parquet": PARQUET,
    "application/parquet": PARQUET,
    "application/vnd.apache.parquet": PARQUET,
}

ANY = "*/*"

_TOKEN = r"[\w!#$%&'*+\-.^`|~]+"  # RFC 9110's tchar (ASCII: \w is letters, digits, "_")
_KEY = re.compile(rf"({_TOKEN})=", re.ASCII)
_VALUE = re.compile(rf'({_TOKEN})|"((?:[^"\\]|\\.)*)"', re.ASCII | re.DOTALL)
_ESCAPED = re.compile(r"\\(.)", re.ASCII | re.DOTALL)
_NEXT = re.compile(r";[ \t]*")


@dataclass(frozen=True, slots=True)
class MediaType:
    """A parsed media type: lower-case canonical ``essence`` plus lower-case-keyed ``params``."""

    essence: str
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def main_type(self) -> str:
        return self.essence.partition("/")[0]


def canonical(essence: str) -> str:
    """The canonical essence for ``essence`` (aliases resolved, lower-cased)."""
    lowered = essence.strip().lower()
    return ALIASES.get(lowered, lowered)


def parse_parameters(header: str) -> tuple[str, dict[str, str]]:
    """``type/subtype`` and the ``key=value`` parameters after it (keys lower-cased; a quoted
    value unquoted, its backslash escapes undone; the last of a repeated key wins). A part that
    is no parameter is skipped; an unclosed quoted value ends the parameters; without a
    ``type/subtype`` there are none."""
    value, _, rest = header.partition(";")
    value = value.strip(" \t")
    return value, _parameters(rest.strip(" \t")) if value else {}


def _parameters(rest: str) -> dict[str, str]:
    parameters: dict[str, str] = {}
    at = 0
    while at < len(rest):
        key = _KEY.match(rest, at)
        if key is not None:
            at = key.end()
            if (parameter := _VALUE.match(rest, at)) is not None:
                parameters[key.group(1).lower()] = _unquoted(parameter)
                at = parameter.end()
            elif rest.startswith('"', at):
                break
        if (delimiter := _NEXT.search(rest, at)) is None:
            break
        at = delimiter.end()
    return parameters


def _unquoted(parameter: re.Match[str]) -> str:
    token, quoted = parameter.groups()
    return token if token is not None else _ESCAPED.sub(r"\1", quoted)


def parse_media_type(header: str) -> MediaType:
    """Parse a Content-Type header value such as ``Text/CSV; label_size=0``.

    Raises UnsupportedMediaType when the value is not of the form ``type/subtype[; params]``.
    """
    essence, params = parse_parameters(header)
    essence = canonical(essence)
    if "/" not in essence or "=" in essence or " " in essence:
        raise UnsupportedMediaType(f"Content-Type {header!r} is not a media type")
    return MediaType(essence, {k.lower(): v for k, v in params.items()})


@dataclass(frozen=True, slots=True)
class AcceptRange:
    """One entry of an Accept header: a media range, its quality and its position."""

    essence: str
    quality: float
    position: int

    @property
    def specificity(self) -> int:
        """2 for ``type/subtype``, 1 for ``type/*``, 0 for ``*/*``."""
        if self.essence == ANY:
            return 0
        return 1 if self.essence.endswith("/*") else 2

    def matches(self, offer: str) -> bool:
        if self.specificity == 0:
            return True
        if self.specificity == 1:
            return offer.partition("/")[0] == self.essence.partition("/")[0]
        return offer == self.essence


def _quality(params: Mapping[str, str], raw: str) -> float:
    value = params.get("q", "1")
    try:
        quality = float(value)
    except ValueError:
        raise NotAcceptable(f"Accept entry {raw.strip()!r} has an invalid q-value") from None
    if not 0.0 <= quality <= 1.0:
        raise NotAcceptable(f"Accept entry {raw.strip()!r} has a q-value outside 0..1")
    return quality


def parse_accept(header: str) -> list[AcceptRange]:
    """Parse an Accept header into ranges; parameters other than ``q`` are ignored for matching."""
    ranges = []
    for position, raw in enumerate(header.split(",")):
        if not raw.strip():
            continue
        essence, params = parse_parameters(raw)
        lowered = {k.lower(): v for k, v in params.items()}
        ranges.append(AcceptRange(canonical(essence), _quality(lowered, raw), position))
    return ranges


def _best_range(ranges: Sequence[AcceptRange], offer: str) -> AcceptRange | None:
    """The most specific range that matches ``offer`` (RFC 9110 §12.5.1)."""
    matching = [r for r in ranges if r.matches(offer)]
    if not matching:
        return None
    return max(matching, key=lambda r: (r.specificity, -r.position))


def _is_wildcard_only(ranges: Sequence[AcceptRange]) -> bool:
    return all(r.essence == ANY and r.quality > 0 for r in ranges)


def negotiate(accept: str | None, offers: Sequence[str], default: str) -> str:
    """Pick the offer to answer with.

    A missing, empty or ``*/*``-only Accept gets ``default``. Otherwise the offer with the
    highest quality wins; ties go to the more specific range, then to the range listed first,
    then to ``default``, then to the order of ``offers``. Raises NotAcceptable when no offer
    has a quality above zero.
    """
    default = canonical(default)  # e.g. SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT=Application/JSON
    ranges = parse_accept(accept) if accept else []
    if not ranges or _is_wildcard_only(ranges):
        return default
    scored = []
    for order, offer in enumerate(offers):
        best = _best_range(ranges, offer)
        if best is not None and best.quality > 0:
            key = (best.quality, best.specificity, -best.position, offer == default, -order)
            scored.append((key, offer))
    if not scored:
        raise NotAcceptable(
            f"None of the types in Accept {accept!r} can be produced; "
            f"supported: {', '.join(offers)}"
        )
    return max(scored)[1]
