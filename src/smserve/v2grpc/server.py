"""The gRPC door's server inside one gunicorn worker: grpcio's asyncio server, on a thread and
an event loop of its own, answering from the worker's models.

Why in each worker (see docs/design/grpc.md for the measurements): every worker binds the gRPC port
with ``SO_REUSEPORT`` (grpcio's default) and the kernel spreads connections among them, so
gRPC gets every worker's CPU and the models the worker has already loaded, and lives and dies
with the worker that gunicorn supervises. It is started only after the worker has loaded its
models (the gunicorn master, which forks, never has gRPC in it) and it stops with the worker:
on SIGTERM it stops taking calls and lets those in flight finish within the graceful timeout.

Why asyncio rather than grpcio's thread-pool server: that server waits for a call's request
message on one of its pool threads, so a client that stalls in the middle of a message holds
a thread as long as it likes, and a few such clients hold them all. The asyncio server waits
for messages on the event loop; a call reaches the model only once its whole message is in.
Limits: a message over the payload limit is refused (RESOURCE_EXHAUSTED) before it is read
whole; a connection must finish its HTTP/2 handshake within the header timeout; a peer that
stops answering pings is dropped; an idle connection is closed after the keep-alive time.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from smserve.config import Settings
from smserve.errors import InvalidInput, StartupError
from smserve.metrics import Metrics
from smserve.v2grpc.accounting import RpcCount
from smserve.v2grpc.api import GRPCInferenceAPI, Method
from smserve.v2grpc.port import grpc_port
from smserve.v2grpc.protocol import MESSAGES, METHODS, SERVICE
from smserve.v2grpc.status import status_of

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
KEEPALIVE_PING_S = 20  # a peer that does not answer a ping within KEEPALIVE_TIMEOUT_S is gone
KEEPALIVE_TIMEOUT_S = 10
MAX_STREAMS = 128  # concurrent calls on one connection
Behavior = Callable[[bytes, grpc.aio.ServicerContext[bytes, bytes]], Any]


def server_options(settings: Settings) -> list[tuple[str, int]]:
    """grpcio's channel arguments for ``settings``."""
    return [
        ("grpc.so_reuseport", 1),
        ("grpc.max_receive_message_length", settings.max_payload_bytes),
        ("grpc.max_send_message_length", -1),
        ("grpc.max_concurrent_streams", MAX_STREAMS),
        ("grpc.server_handshake_timeout_ms", settings.client_header_timeout_s * 1000),
        ("grpc.max_connection_idle_ms", max(settings.keep_alive_s, 1) * 1000),
        ("grpc.keepalive_time_ms", KEEPALIVE_PING_S * 1000),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_S * 1000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


class GrpcServer:
    """One worker's gRPC server: ``start`` returns once it listens (or raises StartupError),
    ``begin_stop`` stops taking calls, ``wait_stopped`` waits for those in flight. Every
    call is counted in ``metrics`` (None: not counted)."""

    def __init__(
        self, api: GRPCInferenceAPI, settings: Settings, metrics: Metrics | None = None
    ) -> None:
        self.api = api
        self.metrics = metrics
        self.address = f"{settings.bind_host}:{grpc_port(settings)}"
        self.options = server_options(settings)
        self.grace_s = float(settings.graceful_timeout_s)
        self._listening = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: grpc.aio.Server | None = None
        self._thread = threading.Thread(target=self._run, name="smserve-grpc", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._listening.wait(START_TIMEOUT_S) or self._failure is not None:
            raise StartupError(
                f"the gRPC server could not listen on {self.address}: "
                f"{self._failure or 'timed out'}"
            )
        logger.info("gRPC (the Open Inference Protocol) listening on %s", self.address)

    def begin_stop(self) -> None:
        """Stop taking calls; those in flight get the graceful timeout. Safe from a signal
        handler: it only schedules the stop on the server's own loop."""
        if self._loop is not None and self._server is not None:
            server = self._server
            self._loop.call_soon_threadsafe(lambda: self._loop_stop(server))

    def wait_stopped(self, timeout_s: float) -> bool:
        """True once the server has stopped (its thread ended) within ``timeout_s``."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _loop_stop(self, server: grpc.aio.Server) -> None:
        asyncio.ensure_future(server.stop(self.grace_s))

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001  # reported to start(), or logged
            self._failure = exc
            if self._listening.is_set():
                logger.exception("the gRPC server failed")
            self._listening.set()

    async def _serve(self) -> None:
        server = grpc.aio.server(options=self.options)
        server.add_generic_rpc_handlers((_handler(self.api, self.metrics),))
        server.add_insecure_port(self.address)  # raises RuntimeError when it cannot bind
        await server.start()
        self._loop, self._server = asyncio.get_running_loop(), server
        self._listening.set()
        await server.wait_for_termination()


def _handler(api: GRPCInferenceAPI, metrics: Metrics | None) -> grpc.GenericRpcHandler:
    methods = api.methods
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            name: grpc.unary_unary_rpc_method_handler(_behavior(name, methods[name], metrics))
            for name in METHODS
        },
    )


def _behavior(name: str, method: Method, metrics: Metrics | None) -> Behavior:
    """An RPC answered on the event loop: bytes in (parsed here, so that a malformed message
    is INVALID_ARGUMENT, not grpcio's INTERNAL), bytes out; counted in ``metrics``."""
    request_class = MESSAGES[METHODS[name][0]]

    async def behave(data: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        count, request = RpcCount(metrics), None
        try:
            request = _parse(request_class, data)
            reply: bytes = method(request).SerializeToString()
            count.done(request, HTTPStatus.OK, (len(data), len(reply)))
            return reply
        except Exception as exc:  # noqa: BLE001  # every failure becomes a status
            status, code, message = status_of(exc, name)
        count.done(request, status, (len(data), 0))
        await context.abort(code, message)
        raise AssertionError("abort returned")  # pragma: no cover  # abort always raises

    return behave


def _parse(request_class: Any, data: bytes) -> Any:
    try:
        return request_class.FromString(data)
    except DecodeError as exc:
        raise InvalidInput(
            f"the request is not a valid {request_class.DESCRIPTOR.name} message: {exc}"
        ) from None
