"""TensorFlow Serving's REST protocol (``/v1/models/...``), transport-free.

Parsing bodies the way TF Serving's JSON reader does, building tensors from ``instances`` /
``inputs``, writing ``predictions`` / ``outputs`` / ``results`` with its float formatting,
tf.Example JSON for classify and regress, signatures synthesized per model kind, and the
status and metadata documents. Error messages are TF Serving's own, byte for byte where the
server defines them. Nothing here imports Flask: ``api.TFServingAPI`` is the door, mounted by
``smserve.http`` under ``/v1/``.
"""
