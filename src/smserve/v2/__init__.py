"""The Open Inference Protocol (KServe V2) REST API, transport-free: routes, infer requests
(JSON tensors and Triton's binary tensor extension), responses, metadata and health.
``smserve.v2.api.V2API`` is the door; ``smserve.http`` mounts it. Nothing here imports Flask.
"""
