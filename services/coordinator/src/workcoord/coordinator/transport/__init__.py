"""The coordinator's gRPC transport: protobuf in, engine calls, protobuf out; no domain rule.

``gate`` authenticates and validates every call before any method runs (the methods read their
caller with ``gate.caller()``); one module per service holds its methods (``admin``,
``work_coordinators``, ``lanes``, ``workers``, ``feed``, ``maintenance``, ``sessions``);
``mapping`` and ``tenancy_mapping`` convert between protobuf and domain objects; ``servicers``
lists the services the server registers.
"""
