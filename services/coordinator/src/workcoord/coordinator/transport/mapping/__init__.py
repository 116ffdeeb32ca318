"""Protobuf ↔ domain mapping. Private fields (inputs, tokens, checkpoints) are dropped here on
the way out, except where a worker receives its own lease.

One module per concern; everything is re-exported here, so callers write ``mapping.x``.
"""

from __future__ import annotations

from .admin import (
    leadership_to_pb,
    org_to_pb,
    principal_to_pb,
    settings_to_pb,
    user_to_pb,
    work_key_to_pb,
)
from .coordinators import (
    check_update_paths,
    coordinator_changes,
    coordinator_to_pb,
    populated_paths,
)
from .lanes import (
    attempt_to_pb,
    item_detail_to_pb,
    item_spec_from_pb,
    item_to_pb,
    lane_spec_from_pb,
    lane_to_pb,
)
from .reads import (
    digest_to_pb,
    escalation_to_pb,
    event_to_pb,
    explanation_to_pb,
    pending_action_to_pb,
    report_to_pb,
    view_response,
    view_to_pb,
)
from .reports import (
    checkpoint_from_pb,
    checkpoint_to_pb,
    evidence_from_pb,
    failure_from_pb,
    lease_ask_from_pb,
    run_identity_from_pb,
)
from .scalars import (
    dur,
    enum_from_pb,
    from_dict,
    from_optional_ts,
    from_ts,
    page_to_pb,
    retry_from_pb,
    retry_to_pb,
    review_from_pb,
    review_to_pb,
    struct,
    to_dict,
    ts,
)
from .workers import (
    lease_to_pb,
    worker_fence_to_pb,
    worker_from_pb,
    worker_to_pb,
)

__all__ = [
    "attempt_to_pb",
    "check_update_paths",
    "checkpoint_from_pb",
    "checkpoint_to_pb",
    "coordinator_changes",
    "coordinator_to_pb",
    "digest_to_pb",
    "dur",
    "enum_from_pb",
    "escalation_to_pb",
    "event_to_pb",
    "evidence_from_pb",
    "explanation_to_pb",
    "failure_from_pb",
    "from_dict",
    "from_optional_ts",
    "from_ts",
    "item_detail_to_pb",
    "item_spec_from_pb",
    "item_to_pb",
    "lane_spec_from_pb",
    "lane_to_pb",
    "leadership_to_pb",
    "lease_ask_from_pb",
    "lease_to_pb",
    "org_to_pb",
    "page_to_pb",
    "pending_action_to_pb",
    "populated_paths",
    "principal_to_pb",
    "report_to_pb",
    "retry_from_pb",
    "retry_to_pb",
    "review_from_pb",
    "review_to_pb",
    "run_identity_from_pb",
    "settings_to_pb",
    "struct",
    "to_dict",
    "ts",
    "user_to_pb",
    "view_response",
    "view_to_pb",
    "work_key_to_pb",
    "worker_fence_to_pb",
    "worker_from_pb",
    "worker_to_pb",
]
