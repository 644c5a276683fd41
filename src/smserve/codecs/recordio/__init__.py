"""RecordIO-protobuf (``application/x-recordio-protobuf``), the built-in algorithms' format.

``codec`` is the codec the registry lists; ``framing`` reads and writes RecordIO frames (for the
codec and for ``smserve score``'s RecordIO split); ``records`` turns ``aialgs.data.Record``
payloads into rows, ``fast`` does so vectorised for the SDK's canonical dense rows, ``schema``
holds the Record message, and ``writer`` writes answers. Nothing is imported here.
"""
