"""The coordinator's tables (SQLAlchemy Core), the same on PostgreSQL and SQLite.

Every tenant table is keyed by work coordinator first, so a future shard key is already in
place. Partial indexes serve the hot paths: the claim (ready items of one class, by priority
then FIFO) and the sweep (live attempts by expiry). Two invariants are enforced by the
database itself: one live attempt per item, and one live holder per exclusive key.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)

from .column_types import NAMING, Id, Json, Time, UtcDateTime, hot_storage, metadata
from .schema_outbound import tracker_connections, webhook_deliveries, webhooks
from .schema_queue import WRITER_KEEPS_QUEUE, ready_items

# Which code revisions can run on each applied schema revision (written by the migrations,
# read at start-up by storage.migrate; the domain never touches it).
schema_compatibility = Table(
    "workcoord_schema_compatibility",
    metadata,
    Column("revision", String(32), primary_key=True),
    Column("compatible_from", String(32), nullable=False),
)

platform_settings = Table(
    "platform_settings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("work_coordinator_enabled", Boolean, nullable=False),
    Column("version", Integer, nullable=False),
    Column("update_time", Time, nullable=False),
    # Moved by triggers on every change to work keys, user tokens, users and org members
    # (migration 0006; CREDENTIAL_TRIGGERS below for a schema made from this module).
    Column("credentials_epoch", BigInteger, nullable=False, server_default=text("0")),
)

# Secrets the installation makes for itself (the page-token signing key), shared by replicas.
installation_secrets = Table(
    "installation_secrets",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("secret", String(128), nullable=False),
    Column("create_time", Time, nullable=False),
)

# Creates that carried a request id, unique within their scope (an org's work coordinators, a
# work coordinator's lanes or grants, a lane's items), with a fingerprint of the request body.
request_ids = Table(
    "request_ids",
    metadata,
    Column("scope", String(200), primary_key=True),
    Column("request_id", String(128), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("resource_id", Id, nullable=False),
    Column("create_time", Time, nullable=False),
)

orgs = Table(
    "orgs",
    metadata,
    Column("slug", String(63), primary_key=True),
    Column("display_name", String(200), nullable=False),
    Column("create_time", Time, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("user_id", Id, primary_key=True),
    Column("email", String(254), nullable=False, unique=True),
    Column("display_name", String(200), nullable=False),
    Column("platform_admin", Boolean, nullable=False),
    Column("verified", Boolean, nullable=False),
    Column("create_time", Time, nullable=False),
)

org_members = Table(
    "org_members",
    metadata,
    Column("org_slug", String(63), ForeignKey("orgs.slug"), nullable=False),
    Column("user_id", Id, ForeignKey("users.user_id"), nullable=False),
    Column("role", String(16), nullable=False),
    Column("create_time", Time, nullable=False),
    PrimaryKeyConstraint("org_slug", "user_id"),
)

user_tokens = Table(
    "user_tokens",
    metadata,
    Column("token_id", Id, primary_key=True),
    Column("user_id", Id, ForeignKey("users.user_id"), nullable=False),
    Column("display_name", String(200), nullable=False),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("create_time", Time, nullable=False),
    Column("expire_time", Time),
    Column("revoke_time", Time),
)

work_keys = Table(
    "work_keys",
    metadata,
    Column("key_id", Id, primary_key=True),
    Column("display_name", String(200), nullable=False),
    Column("org_slug", String(63), nullable=False),
    Column("coordinator_ids", Json, nullable=False),
    Column("capabilities", Json, nullable=False),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("create_time", Time, nullable=False),
    Column("created_by", String(140), nullable=False),
    Column("expire_time", Time),
    Column("revoke_time", Time),
)

work_coordinators = Table(
    "work_coordinators",
    metadata,
    Column("coordinator_id", Id, primary_key=True),
    Column("scope", String(8), nullable=False),
    Column("org_slug", String(63), nullable=False),
    Column("display_name", String(200), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("config", Json, nullable=False),
    Column("config_version", Integer, nullable=False),
    Column("request_id", String(128), nullable=False),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    Column("item_seq", BigInteger, nullable=False, server_default=text("0")),
    # What the digest owner was last mailed (MailMarks; NULL until the first mail). From 0009.
    Column("mail_marks", Json),
    Column("webhook_filters", Json, nullable=False, server_default=text("'{}'")),
    # The day budget (BudgetLimit; NULL: none) and whether any lane has one. From 0015.
    Column("budget", Json),
    Column("lane_budgets", Boolean, nullable=False, server_default=text("false")),
    **hot_storage(50),
)

lanes = Table(
    "lanes",
    metadata,
    Column("lane_id", Id, primary_key=True),
    Column("coordinator_id", Id, ForeignKey("work_coordinators.coordinator_id"), nullable=False),
    Column("title", String(200), nullable=False),
    Column("template", String(16), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("inputs", Json, nullable=False),
    Column("state", String(16), nullable=False),
    Column("paused", Boolean, nullable=False),
    Column("paused_time", Time),
    Column("spec", Json, nullable=False),
    Column("fail_rounds", Integer, nullable=False),
    Column("close_reason", Text, nullable=False),
    Column("receipt", Json),
    Column("request_id", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    # The lane's turn in the claim order (fair leasing): the work coordinator's revision when
    # one of its items was last leased, 0 if never. A store column, not a field of Lane.
    Column("served_turn", BigInteger, nullable=False, server_default=text("0")),
    # The lane's lifetime budget (BudgetLimit; NULL: none). From 0015.
    Column("budget", Json),
    Index("ix_lanes_coordinator_created", "coordinator_id", "create_time", "lane_id"),
    Index(
        "uq_lanes_request",
        "coordinator_id",
        "request_id",
        unique=True,
        postgresql_where=text("request_id <> ''"),
        sqlite_where=text("request_id <> ''"),
    ),
)

items = Table(
    "items",
    metadata,
    Column("item_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("lane_id", Id, ForeignKey("lanes.lane_id"), nullable=False),
    Column("key", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("worker_class", String(32), nullable=False),
    Column("state", String(20), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("held", Boolean, nullable=False),
    Column("not_before", Time),
    Column("title", String(200), nullable=False),
    Column("brief", Text, nullable=False),
    Column("depends_on", Json, nullable=False),
    Column("inputs", Json, nullable=False),
    Column("placement", Json),
    Column("exclusive_key", String(128), nullable=False),
    Column("retry_policy", Json, nullable=False),
    Column("action_classes", Json, nullable=False),
    Column("needs_human", Boolean, nullable=False),
    Column("requires_approval", Boolean, nullable=False),
    Column("attempt_count", Integer, nullable=False),
    Column("attempt_seq", Integer, nullable=False),
    Column("dead_letter_reason", String(16)),
    Column("stop_reason", Text, nullable=False),
    Column("sensitive", Boolean, nullable=False),
    Column("evidence", Json),
    Column("last_error", Json),
    Column("current_lease_id", String(64), nullable=False),
    Column("continues_lease_id", String(64), nullable=False),
    Column("ready_time", Time),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    # The item's own bound on one attempt (NULL: the coordinator's default for its class).
    Column("max_run_seconds", Integer),
    # Also how a lane's items are found (sorted by seq after): no second index on lane_id, so
    # an item transition writes one index entry fewer (see migration 0007).
    UniqueConstraint("lane_id", "key"),
    # Half of each page is left free: a transaction that moves every item of a page (a sweep's
    # batch, a Lease of many) finds room for each row's new version there, so the update is HOT
    # (migration 0016; at 80 only about a third of such updates were).
    **hot_storage(50),
)
# No index of items names its state: the claim reads the ready queue (.schema_queue, kept by
# triggers), so a transition that changes no indexed column is a HOT update (migration 0016).

attempts = Table(
    "attempts",
    metadata,
    Column("lease_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("item_id", Id, ForeignKey("items.item_id"), nullable=False),
    Column("lane_id", Id, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("token_hash", String(64), nullable=False),
    Column("worker_id", String(128), nullable=False),
    Column("worker_class", String(32), nullable=False),
    Column("principal", String(140), nullable=False),
    Column("lease_seconds", Integer, nullable=False),
    Column("lease_expire_time", Time, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("start_time", Time),
    Column("end_time", Time),
    Column("run_identity", Json),
    Column("progress", Text, nullable=False),
    Column("error", Json),
    Column("continues_lease_id", String(64), nullable=False),
    Column("counted", Boolean, nullable=False),
    Column("exclusive_key", Text, nullable=False),
    # Private: never leaves through feeds, views, summaries or events.
    Column("checkpoint", Json),
    # Which Lease call granted it (a digest, "" for none) and its token's salt.
    Column("lease_request", String(64), nullable=False, server_default=text("''")),
    Column("token_nonce", String(64), nullable=False, server_default=text("''")),
    # What the attempt spent so far (running totals its worker reports; a Usage document).
    Column("usage", Json),
    # When the attempt must wind down (max_run_duration, fixed at lease; NULL: none).
    Column("deadline_time", Time),
    Index("ix_attempts_item", "item_id", "attempt"),
    # A retried Lease finds what its first call granted.
    Index(
        "ix_attempts_lease_request",
        "coordinator_id",
        "lease_request",
        postgresql_where=text("lease_request <> ''"),
        sqlite_where=text("lease_request <> ''"),
    ),
    # The sweep and capacity counts: live attempts by expiry and by class.
    Index(
        "ix_attempts_live_expiry",
        "coordinator_id",
        "lease_expire_time",
        postgresql_where=text("status IN ('LEASED', 'RUNNING')"),
        sqlite_where=text("status IN ('LEASED', 'RUNNING')"),
    ),
    Index(
        "ix_attempts_live_class",
        "coordinator_id",
        "worker_class",
        postgresql_where=text("status IN ('LEASED', 'RUNNING')"),
        sqlite_where=text("status IN ('LEASED', 'RUNNING')"),
    ),
    # Invariant 1, enforced by the database: at most one live attempt per item.
    Index(
        "uq_attempts_one_live_per_item",
        "item_id",
        unique=True,
        postgresql_where=text("status IN ('LEASED', 'RUNNING')"),
        sqlite_where=text("status IN ('LEASED', 'RUNNING')"),
    ),
    **hot_storage(80),
)

# One row per exclusive key (or placement resource) held by a live attempt. The primary key
# makes "one live attempt per exclusive key" a database invariant.
exclusive_holds = Table(
    "exclusive_holds",
    metadata,
    Column("coordinator_id", Id, nullable=False),
    Column("key", String(140), nullable=False),
    Column("lease_id", Id, nullable=False),
    PrimaryKeyConstraint("coordinator_id", "key"),
    Index("ix_exclusive_holds_lease", "lease_id"),
    **hot_storage(70),
)

events = Table(
    "events",
    metadata,
    Column("coordinator_id", Id, nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("type", String(32), nullable=False),
    Column("time", Time, nullable=False),
    Column("lane_id", String(64), nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("lease_id", String(64), nullable=False),
    Column("actor", String(140), nullable=False),
    Column("data", Json, nullable=False),
    PrimaryKeyConstraint("coordinator_id", "revision"),
    Index("ix_events_item", "coordinator_id", "item_id", "revision"),
    Index("ix_events_lane", "coordinator_id", "lane_id", "revision"),
)

workers = Table(
    "workers",
    metadata,
    Column("coordinator_id", Id, nullable=False),
    Column("worker_id", String(128), nullable=False),
    Column("worker_class", String(32), nullable=False),
    Column("principal", String(140), nullable=False),
    Column("capabilities", Json, nullable=False),
    Column("toolchains", Json, nullable=False),
    Column("labels", Json, nullable=False),
    Column("cpu_count", Integer, nullable=False),
    Column("memory_bytes", BigInteger, nullable=False),
    Column("disk_bytes", BigInteger, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("observe_time", Time, nullable=False),
    Column("last_ask_time", Time),
    # Set while the worker is fenced: why, which attempt, since and until when.
    Column("fence", Json),
    # Every class it serves, worker_class first ([]: that class only); 0013.
    Column("worker_classes", Json, nullable=False, server_default=text("'[]'")),
    PrimaryKeyConstraint("coordinator_id", "worker_id"),
    **hot_storage(80),
)

blockers = Table(
    "blockers",
    metadata,
    Column("blocker_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("lane_id", Id, ForeignKey("lanes.lane_id"), nullable=False),
    Column("reason", Text, nullable=False),
    Column("open", Boolean, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("resolve_time", Time),
    Index("ix_blockers_lane", "lane_id"),
)

tickets = Table(
    "tickets",
    metadata,
    Column("coordinator_id", Id, nullable=False),
    Column("lane_id", Id, ForeignKey("lanes.lane_id"), nullable=False),
    Column("tracker", String(32), nullable=False),
    Column("key", String(256), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("state", String(16), nullable=False),
    Column("observe_time", Time),
    PrimaryKeyConstraint("lane_id", "tracker", "key"),
)

leaderships = Table(
    "leaderships",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("holder_id", String(128), nullable=False),
    Column("expire_time", Time, nullable=False),
    Column("term", BigInteger, nullable=False),
)

# --- lanes that ship: pending actions, escalations, digests ----------------------------------

pending_actions = Table(
    "pending_actions",
    metadata,
    Column("action_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("lane_id", Id, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("owner", String(254), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_time", Time),
    Column("last_error", Text, nullable=False),
    Column("ticket_tracker", String(32), nullable=False),
    Column("ticket_key", String(256), nullable=False),
    Column("resolution", Text, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("update_time", Time, nullable=False),
    Index("ix_pending_actions_due", "coordinator_id", "state", "next_attempt_time"),
)

escalations = Table(
    "escalations",
    metadata,
    Column("escalation_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("lane_id", Id, nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("escalated_to", Json, nullable=False),
    Column("open", Boolean, nullable=False),
    Column("create_time", Time, nullable=False),
    Column("resolve_time", Time),
    Index("ix_escalations_open", "coordinator_id", "open", "item_id"),
)

digest_entries = Table(
    "digest_entries",
    metadata,
    Column("entry_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("day", String(10), nullable=False),
    Column("owner", String(254), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("lane_id", String(64), nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("action_id", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("time", Time, nullable=False),
    Index("ix_digest_entries_day", "coordinator_id", "day", "time"),
)

# Usage roll-ups: per work coordinator, scope (COORDINATOR, LANE, ITEM, WORKER_CLASS, MODEL),
# key and UTC day ("" for all time); each reported increase is added in its write's transaction.
usage_totals = Table(
    "usage_totals",
    metadata,
    Column("coordinator_id", Id, nullable=False),
    Column("scope", String(16), nullable=False),
    Column("key", String(128), nullable=False),
    Column("day", String(10), nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cache_read_tokens", BigInteger, nullable=False),
    Column("cache_write_tokens", BigInteger, nullable=False),
    Column("cost_micros", BigInteger, nullable=False),
    PrimaryKeyConstraint("coordinator_id", "scope", "day", "key"),
)

# --- tenancy: parent grants, browser sessions, one-time login codes --------------------------

grants = Table(
    "grants",
    metadata,
    Column("grant_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("parent_coordinator_id", Id, nullable=False),
    Column("permissions", Json, nullable=False),
    Column("expire_time", Time, nullable=False),
    Column("revoke_time", Time),
    Column("create_time", Time, nullable=False),
    Column("created_by", String(140), nullable=False),
    Column("request_id", String(128), nullable=False),
    Index("ix_grants_pair", "parent_coordinator_id", "coordinator_id"),
    Index("ix_grants_child", "coordinator_id", "create_time"),
)


# The outbox: one row per (event, webhook), written in the event's transaction.

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", Id, primary_key=True),
    Column("user_id", Id, ForeignKey("users.user_id"), nullable=False),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("csrf_hash", String(64), nullable=False),
    Column("create_time", Time, nullable=False),
    Column("expire_time", Time, nullable=False),
    Column("revoke_time", Time),
)

login_codes = Table(
    "login_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    Column("user_id", Id, ForeignKey("users.user_id"), nullable=False),
    Column("create_time", Time, nullable=False),
    Column("expire_time", Time, nullable=False),
    Column("use_time", Time),
)

# A work coordinator's credentials for ticket trackers (the credential sealed, never plain).

__all__ = [
    "NAMING",
    "WRITER_KEEPS_QUEUE",
    "Json",
    "Time",
    "UtcDateTime",
    "attempts",
    "blockers",
    "digest_entries",
    "escalations",
    "events",
    "exclusive_holds",
    "grants",
    "installation_secrets",
    "items",
    "lanes",
    "leaderships",
    "login_codes",
    "metadata",
    "org_members",
    "orgs",
    "pending_actions",
    "platform_settings",
    "ready_items",
    "request_ids",
    "schema_compatibility",
    "sessions",
    "tickets",
    "tracker_connections",
    "user_tokens",
    "users",
    "webhook_deliveries",
    "webhooks",
    "work_coordinators",
    "work_keys",
    "workers",
]

# The credentials epoch's triggers, as migration 0006 creates them, for a schema made from this
# module (``metadata.create_all``): the same statements, so both kinds of database behave alike.
_CREDENTIAL_TABLES = ("work_keys", "user_tokens", "users", "org_members")
_BUMP_EPOCH = "UPDATE platform_settings SET credentials_epoch = credentials_epoch + 1 WHERE id = 1"
CREDENTIAL_TRIGGERS: dict[str, list[str]] = {
    "postgresql": [
        "CREATE OR REPLACE FUNCTION workcoord_bump_credentials_epoch() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN {_BUMP_EPOCH}; RETURN NULL; END $$",
        *(
            f"CREATE TRIGGER trg_{table}_credentials_epoch "
            f"AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION workcoord_bump_credentials_epoch()"
            for table in _CREDENTIAL_TABLES
        ),
    ],
    "sqlite": [
        f"CREATE TRIGGER trg_{table}_{verb.lower()}_credentials_epoch "
        f"AFTER {verb} ON {table} BEGIN {_BUMP_EPOCH}; END"
        for table in _CREDENTIAL_TABLES
        for verb in ("INSERT", "UPDATE", "DELETE")
    ],
}
for _dialect, _statements in CREDENTIAL_TRIGGERS.items():
    for _statement in _statements:
        ddl = DDL(_statement).execute_if(dialect=_dialect)  # type: ignore[no-untyped-call]
        event.listen(metadata, "after_create", ddl)
