"""Offline scoring: ``smserve score`` splits, batches, scores and assembles files as SageMaker
Batch Transform does, with the endpoint's own service in batch mode, so the answers are the
bytes the endpoint returns. No HTTP: it sits beside ``http/``, over ``service``.

Modules: ``command`` (the subcommand's flags), ``options`` (what was asked), ``inputs``
(which files, which output names) and ``s3`` (``s3://`` ones), ``split`` (records and
mini-batches), ``shards`` (a worker's unit of work), ``scorer`` and ``join`` (one mini-batch's
answer), ``worker`` and ``engine`` (processes), ``assemble`` (ordered, atomic writing),
``output`` and ``progress``. Nothing is imported here, so ``smserve --help`` does
not load numpy."""
