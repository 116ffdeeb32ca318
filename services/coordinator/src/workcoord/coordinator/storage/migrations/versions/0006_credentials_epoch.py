"""Expand: a credentials epoch that every change to credentials, users or org roles moves.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 19:40:00

``platform_settings`` gains ``credentials_epoch``. Triggers on ``work_keys``, ``user_tokens``,
``users`` and ``org_members`` add one to it on every insert, update or delete, whoever makes the
change (code of this release, of the previous one, or an operator in ``psql``). A coordinator
may then keep a principal it resolved while the epoch still reads the same: a revocation is
seen on the very next request. The column has a default and the triggers need nothing from
the code, so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_TABLES = ("work_keys", "user_tokens", "users", "org_members")
_BUMP = "UPDATE platform_settings SET credentials_epoch = credentials_epoch + 1 WHERE id = 1"
_FUNCTION = "workcoord_bump_credentials_epoch"


def _postgres(upgrade: bool) -> list[str]:
    if not upgrade:
        return [
            *(
                f"DROP TRIGGER IF EXISTS trg_{table}_credentials_epoch ON {table}"
                for table in _TABLES
            ),
            f"DROP FUNCTION IF EXISTS {_FUNCTION}()",
        ]
    return [
        f"CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {_BUMP}; RETURN NULL; END $$",
        *(
            f"CREATE TRIGGER trg_{table}_credentials_epoch "
            f"AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}()"
            for table in _TABLES
        ),
    ]


def _sqlite(upgrade: bool) -> list[str]:
    names = [(table, op_name) for table in _TABLES for op_name in ("INSERT", "UPDATE", "DELETE")]
    if not upgrade:
        return [
            f"DROP TRIGGER IF EXISTS trg_{table}_{op_name.lower()}_credentials_epoch"
            for table, op_name in names
        ]
    return [
        f"CREATE TRIGGER trg_{table}_{op_name.lower()}_credentials_epoch "
        f"AFTER {op_name} ON {table} BEGIN {_BUMP}; END"
        for table, op_name in names
    ]


def _statements(upgrade: bool) -> list[str]:
    dialect = op.get_bind().dialect.name
    return _postgres(upgrade) if dialect == "postgresql" else _sqlite(upgrade)


def upgrade() -> None:
    with op.batch_alter_table("platform_settings", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "credentials_epoch", sa.BigInteger(), nullable=False, server_default=sa.text("0")
            )
        )
    for statement in _statements(upgrade=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(upgrade=False):
        op.execute(statement)
    with op.batch_alter_table("platform_settings", schema=None) as batch_op:
        batch_op.drop_column("credentials_epoch")
