"""Reading a model archive (``model.tar.gz``): safe, bounded unpacking, and listing the files
an archive holds at its top level (to tell whether a folder already holds what it unpacks to).
Knows nothing about model formats. Archives are opened through ``confinement``.

Bounds are checked from the tar headers while the members are listed, so an archive that would
unpack past ``SMSERVE_MAX_MODEL_UNPACKED_MB`` or the free space of the destination is refused
before a single byte is written (tarfile writes exactly the size each header declares).
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path, PurePosixPath, PureWindowsPath

from smserve.algorithms.confinement import open_file
from smserve.errors import ModelLoadError

MIB = 1024 * 1024


class _Refused(Exception):
    """An archive member that is unsafe to write, or the archive is too large; says why."""


def unpack_archive(archive: Path, destination: Path, max_bytes: int) -> Path:
    """Extract the gzip tar ``archive`` into ``destination`` and return it.

    Raises ModelLoadError naming the archive (and member) for absolute paths, ``..`` parts,
    links that leave the archive, devices and other special files, an unpacked size over
    ``max_bytes`` or over the free space of ``destination``, or an unreadable archive.
    """
    try:
        with open_file(archive) as stream, tarfile.open(fileobj=stream, mode="r:*") as tar:
            members = _bounded_members(tar, max_bytes, destination)
            _extract(tar, destination, members)
    except (tarfile.TarError, OSError) as exc:
        raise ModelLoadError(f"{archive}: cannot unpack: {exc}") from exc
    except _Refused as exc:
        raise ModelLoadError(f"{archive}: refusing to unpack: {exc}") from None
    return destination


def _extract(tar: tarfile.TarFile, destination: Path, members: list[tarfile.TarInfo]) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(destination, members=members, filter="data")
        return
    # Python before 3.11.4 (Debian bookworm's 3.11.2) has no extraction filters: the member
    # checks above refuse what the "data" filter refuses; drop special mode bits as it does.
    for member in members:
        member.mode &= 0o755
    tar.extractall(destination, members=members)


def _bounded_members(
    tar: tarfile.TarFile, max_bytes: int, destination: Path
) -> list[tarfile.TarInfo]:
    # Iterating a TarFile reads one header at a time: a bomb stops at the first member past a
    # bound, without decompressing the rest.
    free_bytes = shutil.disk_usage(destination).free
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        check_member(member)
        total += member.size if member.isfile() else 0
        _check_total(total, max_bytes, free_bytes, destination)
        members.append(member)
    return members


def _check_total(total: int, max_bytes: int, free_bytes: int, destination: Path) -> None:
    if total > max_bytes:
        raise _Refused(
            f"it unpacks to more than {_mib(max_bytes)} MiB, the SMSERVE_MAX_MODEL_UNPACKED_MB "
            "limit; raise the limit if the model really is that large"
        )
    if total > free_bytes:
        raise _Refused(
            f"it unpacks to at least {_mib(total)} MiB but only {_mib(free_bytes)} MiB are free "
            f"in {destination.parent}, where it is unpacked (TMPDIR)"
        )


def _mib(size: int) -> str:
    return f"{size / MIB:.0f}" if size >= MIB else f"{size / MIB:.2f}"


def top_level_files(archive: Path) -> dict[str, int | None]:
    """The files ``archive`` holds at its top level (what unpacking puts directly in the
    destination, dot-files aside): name -> size, None for a link. Raises ModelLoadError for
    an unreadable archive or an unsafe member."""
    files: dict[str, int | None] = {}
    try:
        with open_file(archive) as stream, tarfile.open(fileobj=stream, mode="r:*") as tar:
            for member in tar:
                check_member(member)
                parts = [p for p in PurePosixPath(member.name).parts if p != "."]
                if len(parts) == 1 and not member.isdir() and not parts[0].startswith("."):
                    files[parts[0]] = member.size if member.isfile() else None
    except (tarfile.TarError, OSError) as exc:
        raise ModelLoadError(f"{archive}: cannot read: {exc}") from exc
    except _Refused as exc:
        raise ModelLoadError(f"{archive}: refusing to read: {exc}") from None
    return files


def check_member(member: tarfile.TarInfo) -> None:
    """Raise _Refused for a member that could write outside the destination or is special."""
    name = member.name
    if _is_absolute(name) or ".." in PurePosixPath(name).parts:
        raise _Refused(f"member {name!r} has an absolute path or a '..' part")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise _Refused(f"member {name!r} is a device, FIFO or other special file")
    if member.issym() or member.islnk():
        _check_link(member)


def _check_link(member: tarfile.TarInfo) -> None:
    # Symlink targets are relative to the link's directory, hard-link targets to the root.
    base = PurePosixPath(member.name).parent if member.issym() else PurePosixPath()
    target = member.linkname
    if _is_absolute(target) or _escapes(base / target):
        raise _Refused(f"link {member.name!r} points outside the archive ({target!r})")


def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or bool(PureWindowsPath(path).anchor)


def _escapes(path: PurePosixPath) -> bool:
    depth = 0
    for part in path.parts:
        depth += {"..": -1, ".": 0}.get(part, 1)
        if depth < 0:
            return True
    return False
