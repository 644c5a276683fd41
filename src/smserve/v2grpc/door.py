"""The Open Inference Protocol over gRPC as the server sees it: no HTTP routes, a listener of
its own in each worker (``start``, which imports grpcio only when gRPC is on)."""

from __future__ import annotations

from smserve.doors import DoorSpec
from smserve.v2grpc import prepare, start

DOOR = DoorSpec(name="v2grpc", listener=start, prepare=prepare)
