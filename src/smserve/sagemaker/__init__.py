"""The SageMaker hosting door: ``/ping``, ``/invocations`` (also under
``/endpoints/<name>/invocations``, the path boto3 and the SDK use), ``/execution-parameters``,
and a multi-model endpoint's ``/models`` routes, over the model repository.

``api`` answers the hosting routes and ``mme`` the multi-model ones; ``envelope`` is the
door's error body, ``{"error", "message"}``. Nothing here knows HTTP beyond status codes and
header names: ``smserve.http`` routes requests here."""
