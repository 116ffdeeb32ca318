"""The tables of the coordinator's outbound calls: webhooks and their deliveries (the outbox
the recovery leader sends from), and the tracker connections tickets close through. Declared on
the same metadata as :mod:`.schema`, which re-exports them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from .column_types import Id, Json, Time, metadata

__all__ = ["tracker_connections", "webhook_deliveries", "webhooks"]


webhooks = Table(
    "webhooks",
    metadata,
    Column("webhook_id", Id, primary_key=True),
    Column("coordinator_id", Id, ForeignKey("work_coordinators.coordinator_id"), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("event_types", Json, nullable=False),
    Column("format", String(16), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("secret", String(200), nullable=False),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    Column("failing_since", Time),
    Index("ix_webhooks_coordinator", "coordinator_id", "webhook_id"),
)


webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("delivery_id", Id, primary_key=True),
    Column("webhook_id", Id, nullable=False),
    Column("coordinator_id", Id, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("event_type", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("response_code", Integer, nullable=False),
    Column("error", String(500), nullable=False),
    Column("next_attempt_time", Time),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    Index("ux_webhook_deliveries_order", "webhook_id", "revision", unique=True),
    Index("ix_webhook_deliveries_due", "state", "next_attempt_time"),
)


tracker_connections = Table(
    "tracker_connections",
    metadata,
    Column("tracker_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("tracker", String(16), nullable=False),
    Column("base_url", String(2048), nullable=False),
    Column("projects", Json, nullable=False),
    Column("credential_ciphertext", Text, nullable=False),
    Column("credential_fingerprint", String(32), nullable=False),
    Column("done_status", String(128), nullable=False),
    Column("created_by", String(140), nullable=False),
    Column("last_success_time", Time),
    Column("last_error", Text, nullable=False),
    Column("last_error_time", Time),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    Index("ix_tracker_connections_coordinator", "coordinator_id", "tracker_id"),
)
