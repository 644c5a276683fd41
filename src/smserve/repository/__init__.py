"""Where served models come from: TF Serving's versioned layout polled for new versions, the
SageMaker model directory, or the models a multi-model endpoint was told to load.

``config`` reads the model list (a TF Serving model config file, MODEL_NAME/MODEL_BASE_PATH,
or SM_MODEL_DIR), ``versions`` finds versions on disk, ``model`` keeps one model's versions
and hot-swaps them, ``repository`` holds every model and polls, ``mme`` is the multi-model
registry shared by all gunicorn workers, and ``runtime`` the directory they share.
"""
