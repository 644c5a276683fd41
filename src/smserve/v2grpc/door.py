"""The Open Inference Protocol over gRPC as the server sees it: no HTTP routes, a listener of
its own in each worker (``start``, which imports grpcio only when gRPC is on), and its own
setting, its port (``port``)."""

from __future__ import annotations

from smserve.doors import DoorSpec
from smserve.v2grpc import prepare, start
from smserve.v2grpc.port import GRPC_PORT

DOOR = DoorSpec(name="v2grpc", listener=start, prepare=prepare, settings=(GRPC_PORT,))
