"""The fuzzer: mutated and random requests through nginx, and the invariants they must keep."""
