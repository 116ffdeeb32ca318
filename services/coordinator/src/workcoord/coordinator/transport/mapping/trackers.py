"""Tracker connections, as the API shows them: never with their credential."""

from __future__ import annotations

from workcoord.api.v1 import tracker_pb2
from workcoord.coordinator.domain.tickets import TrackerConnection

from .scalars import ts

__all__ = ["tracker_connection_to_pb"]


def tracker_connection_to_pb(connection: TrackerConnection) -> tracker_pb2.TrackerConnection:
    """The connection as the API shows it: never its credential, sealed or not."""
    return tracker_pb2.TrackerConnection(
        tracker_id=connection.tracker_id,
        coordinator_id=connection.coordinator_id,
        tracker=connection.tracker.value,
        base_url=connection.base_url,
        projects=list(connection.projects),
        done_status=connection.done_status,
        credential_set=bool(connection.credential_ciphertext),
        credential_fingerprint=connection.credential_fingerprint,
        created_by=connection.created_by,
        create_time=ts(connection.create_time),
        update_time=ts(connection.update_time),
        last_success_time=ts(connection.last_success_time),
        last_error=connection.last_error,
        last_error_time=ts(connection.last_error_time),
    )
