"""XGBoost's collective held to this host's own address.

XGBoost binds each host's peer listener and error listener to the wildcard address (its C++
``BindHost`` takes no address and no setting), so for the job's duration those two ports are
open on every interface of the machine, and its connections leave from whatever source address
the kernel picks (the tracker then gives that address to the other hosts). While
:func:`held_to` is active, the compiled ``_collective_address`` rewrites both calls made by
XGBoost's library, and only by it: a wildcard bind becomes a bind to the host's address, and a
connection is bound to that address before it leaves. So every socket of the job is on the
address the host's name resolves to: 127.0.0.x in the loopback tests, the instance's own
address on SageMaker. Those connections are also sent without Nagle's delay (``TCP_NODELAY``):
XGBoost's tracker protocol writes a length, then the message, which Nagle's algorithm held back
for the length's delayed acknowledgement (40 ms a meeting).

The address must belong to this machine (checked by binding a socket to it first). Where it
does not, or the extension is missing (a source install without a compiler) or cannot rewrite
the library, XGBoost's own behaviour stays and a warning says so; training goes on.
"""

from __future__ import annotations

import importlib
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

logger = logging.getLogger(__name__)


@contextmanager
def held_to(address: str) -> Iterator[bool]:
    """XGBoost's sockets on ``address`` until the block ends; yields whether they are."""
    held = _hold(address)
    try:
        yield held
    finally:
        if held:
            _extension().release()


def _hold(address: str) -> bool:
    reason = _unusable(address)
    if reason is None:
        try:
            slots = _extension().hold(_xgboost_library(), address)
        except (ImportError, OSError, ValueError) as exc:
            reason = str(exc)
        else:
            logger.info("the collective's sockets are held to %s (%d call sites)", address, slots)
            return True
    logger.warning(
        "XGBoost's collective listens on every address of this host for the job's duration, "
        "not on %s alone: %s",
        address,
        reason,
    )
    return False


def _unusable(address: str) -> str | None:
    """Why ``address`` cannot be held to, or None: it must be an address of this machine."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError as exc:
        return f"{address} is not an address of this machine ({exc.strerror})"
    return None


def _extension() -> ModuleType:
    return importlib.import_module("smserve.training._collective_address")


def _xgboost_library() -> str:
    from xgboost import core

    return str(core._LIB._name)
