"""The fingerprint of a create request, so a reused request id is told apart from a retry.

A retry sends the same body again; a request id reused for a different body must be refused,
never answered with the first request's result. The fingerprint is a SHA-256 of the request's
deterministic protobuf encoding without its request id: the same over gRPC and over REST (the
gateway sends the same message), and independent of JSON key order.
"""

from __future__ import annotations

import hashlib

from google.protobuf.message import Message

__all__ = ["request_fingerprint"]


def request_fingerprint(request: Message, id_field: str = "request_id") -> str:
    """Hex SHA-256 of ``request`` with ``id_field`` cleared."""
    body = type(request)()
    body.CopyFrom(request)
    body.ClearField(id_field)
    return hashlib.sha256(body.SerializeToString(deterministic=True)).hexdigest()
