"""``s3://`` inputs and outputs of ``smserve score``, through pyarrow's S3 filesystem (pyarrow
is a core dependency). Credentials and region come from the AWS SDK's own chain (environment,
profile, instance role); the endpoint from ``Settings.s3_endpoint_url`` (an S3-compatible
service). It owns object names, listing, reading and uploading; not splitting or scoring.

An output is written to a local temporary file and uploaded when complete, so an object under
its final name is always whole (S3 makes an upload visible only once it has finished)."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast

from smserve.errors import ConfigError

SCHEME = "s3://"
UPLOAD_PIECE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class S3Object:
    """An object (or, for listing, a prefix) in ``bucket``; ``endpoint_url`` None is AWS."""

    bucket: str
    key: str
    endpoint_url: str | None = None

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}"

    def __truediv__(self, relative: str) -> S3Object:
        key = f"{self.key.rstrip('/')}/{relative}" if self.key else relative
        return S3Object(self.bucket, key, self.endpoint_url)

    @property
    def name(self) -> str:
        return PurePosixPath(self.key).name

    def exists(self) -> bool:
        return bool(_info(self).type == _fs().FileType.File)

    def size(self) -> int:
        return int(_info(self).size)

    def open_input(self) -> BinaryIO:
        """A stream over the whole object (pyarrow's, which has ``read(n)``)."""
        return cast(BinaryIO, filesystem(self.endpoint_url).open_input_stream(_path(self)))


def is_s3(name: str) -> bool:
    return name.startswith(SCHEME)


def parse(url: str, endpoint_url: str | None) -> S3Object:
    """``s3://bucket/key`` -> S3Object; raises ConfigError for a URL without a bucket."""
    bucket, _, key = url[len(SCHEME) :].partition("/")
    if not bucket:
        raise ConfigError(f"{url}: an S3 URL is s3://BUCKET/KEY")
    return S3Object(bucket, key, endpoint_url)


def listing(root: S3Object) -> Iterator[tuple[S3Object, PurePosixPath]]:
    """``root`` itself when it is an object, else every object under the prefix ``root/``
    in sorted order (hidden names skipped, as in a local folder), with its relative name.
    Raises ConfigError when there is neither."""
    try:
        if root.key and root.exists():
            yield root, PurePosixPath(root.name)
            return
        selector = _fs().FileSelector(_path(root).rstrip("/"), recursive=True, allow_not_found=True)
        found = filesystem(root.endpoint_url).get_file_info(selector)
    except OSError as exc:
        raise ConfigError(f"{root}: cannot list it: {exc}") from None
    prefix = _path(root).rstrip("/") + "/"
    names = sorted(i.path[len(prefix) :] for i in found if i.type == _fs().FileType.File)
    if not names:
        raise ConfigError(f"{root}: no such object, and no objects under it")
    for name in names:
        if not any(part.startswith(".") for part in PurePosixPath(name).parts):
            yield root / name, PurePosixPath(name)


class S3Upload:
    """A Sink: a hidden local temporary file until ``commit`` uploads it to ``target``."""

    def __init__(self, target: S3Object) -> None:
        self.target = target
        descriptor, name = tempfile.mkstemp(prefix=".smserve-upload-")
        self.temporary = Path(name)
        self._file = os.fdopen(descriptor, "w+b")

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def commit(self) -> None:
        self._file.seek(0)
        with filesystem(self.target.endpoint_url).open_output_stream(_path(self.target)) as out:
            while piece := self._file.read(UPLOAD_PIECE_BYTES):
                out.write(piece)
        self.discard()

    def discard(self) -> None:
        self._file.close()
        self.temporary.unlink(missing_ok=True)


@functools.cache
def filesystem(endpoint_url: str | None) -> Any:
    """One pyarrow S3FileSystem per endpoint and process (its connections are reused)."""
    scheme = "http" if (endpoint_url or "").startswith("http://") else "https"
    return _fs().S3FileSystem(endpoint_override=endpoint_url, scheme=scheme)


def _info(item: S3Object) -> Any:
    return filesystem(item.endpoint_url).get_file_info(_path(item))


def _path(item: S3Object) -> str:
    return f"{item.bucket}/{item.key}"


def _fs() -> Any:
    import pyarrow.fs  # type: ignore[import-untyped]

    return pyarrow.fs
