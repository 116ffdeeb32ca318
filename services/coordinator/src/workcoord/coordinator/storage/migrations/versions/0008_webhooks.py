"""Expand: webhooks and their deliveries (the outbox).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 20:00:00

New tables ``webhooks`` and ``webhook_deliveries`` (one row per event and webhook, written in
the event's transaction); ``work_coordinators`` gains ``webhook_filters`` (enabled webhooks →
the event types each selects, read with the coordinator's lock), default ``{}``. Code at 0003
never reads the new tables, and the new column has a default, so it runs on this schema
unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import workcoord.coordinator.storage.schema

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _time(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(
        name, workcoord.coordinator.storage.schema.UtcDateTime(timezone=True), nullable=nullable
    )


def upgrade() -> None:
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("webhook_filters", _JSON, server_default=sa.text("'{}'"), nullable=False)
        )
    op.create_table(
        "webhooks",
        sa.Column("webhook_id", sa.String(length=64), nullable=False),
        sa.Column("coordinator_id", sa.String(length=64), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("event_types", _JSON, nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("secret", sa.String(length=200), nullable=False),
        _time("create_time"),
        _time("update_time"),
        _time("failing_since", nullable=True),
        sa.ForeignKeyConstraint(
            ["coordinator_id"],
            ["work_coordinators.coordinator_id"],
            name=op.f("fk_webhooks_coordinator_id_work_coordinators"),
        ),
        sa.PrimaryKeyConstraint("webhook_id", name=op.f("pk_webhooks")),
    )
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhooks_coordinator", ["coordinator_id", "webhook_id"], unique=False
        )
    op.create_table(
        "webhook_deliveries",
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("webhook_id", sa.String(length=64), nullable=False),
        sa.Column("coordinator_id", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(length=500), nullable=False),
        _time("next_attempt_time", nullable=True),
        _time("create_time"),
        _time("update_time"),
        sa.PrimaryKeyConstraint("delivery_id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_due", ["state", "next_attempt_time"], unique=False
        )
        batch_op.create_index(
            "ux_webhook_deliveries_order", ["webhook_id", "revision"], unique=True
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ux_webhook_deliveries_order")
        batch_op.drop_index("ix_webhook_deliveries_due")
    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.drop_index("ix_webhooks_coordinator")
    op.drop_table("webhooks")
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.drop_column("webhook_filters")
