"""The authorization matrix's contract: the expected outcome of every gRPC method of every
workcoord service x every credential kind (platform admin, org admins of this and another org,
viewer, work keys in scope with each capability and out of scope, revoked and expired keys, a
parent with and without a live grant, the service key, no credential), and how one cell is
called and its outcome read. ``test_authz_matrix`` runs every cell against the real
coordinator (in-process on port 0) over real PostgreSQL.

The expectation table below is the contract: one row per method, one letter per credential
column. A regression prints the exact cells that changed, e.g.
``LaneService/CreateLane x key_read: expected D, got A``.

Letters: ``A`` allowed · ``U`` UNAUTHENTICATED · ``D`` PERMISSION_DENIED · ``N`` NOT_FOUND ·
``n`` NOT_FOUND of a made-up pending action, tracker connection or webhook, after authorization
passed · ``F`` FAILED_PRECONDITION after authorization passed (the record is in the wrong state).

Columns (credential kinds):
``P`` verified platform admin (also the GLOBAL parent's admin) · ``A`` admin of the child's org
· ``O`` admin of another org · ``V`` viewer of the child's org · ``R``/``L``/``W`` a work key in
scope holding only READ / LEASE / WRITE · ``X`` a work key of another work coordinator (every
capability) · ``K`` a revoked key · ``E`` an expired key · ``G`` the parent (a GLOBAL work key,
READ and WRITE) acting on a child that gave it a live grant · ``g`` the parent acting on a child
whose grant was revoked · ``S`` the recovery service key · ``-`` no credential.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.protobuf.message import Message

from workcoord.api.v1 import (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    notification_pb2,
    recovery_pb2,
    session_pb2,
    tracker_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.kit.errors import WorkcoordError

COLUMNS = "PAOVRLWXKEGgS-"
COLUMN_NAMES = {
    "P": "platform_admin",
    "A": "org_admin",
    "O": "other_org_admin",
    "V": "org_viewer",
    "R": "key_read",
    "L": "key_lease",
    "W": "key_write",
    "X": "key_out_of_scope",
    "K": "key_revoked",
    "E": "key_expired",
    "G": "parent_with_grant",
    "g": "parent_without_grant",
    "S": "service_key",
    "-": "no_credential",
}

# Common rows.
READ = "AANAADDNUUNNDU"  # read a child coordinator (humans with a role, READ keys)
WRITE = "AANDDDANUUNNDU"  # create and change lanes and items (admins, WRITE keys)
LEASE = "AANDDADNUUNNDU"  # worker calls (admins, LEASE keys)
DECIDE = "AANDDDDNUUNNDU"  # approve, deny, resume, retry, resolve (admins only)
CONFIGURE = "AANDDDDNUUNNDU"  # configure the child, its grants
PLATFORM = "ADDDDDDDUUDDDU"  # verified platform admins only
SERVICE = "DDDDDDDDUUDDAU"  # the recovery service only
ANYONE = "AAAAAAAAUUAAAU"  # any valid credential
HUMANS = "AAAADDDDUUDDDU"  # any human
CHILD_READ = "ANNNNNNNUUADDU"  # the parent reading a child (needs READ on GLOBAL + grant)
CHILD_WRITE = "ANNNNNNNUUADDU"  # the parent acting on a child (needs WRITE on GLOBAL + grant)

EXPECTED: dict[str, str] = {
    # --------------------------------------------------------------- AdminService
    "AdminService/GetCurrentPrincipal": ANYONE,
    "AdminService/CreateOrg": PLATFORM,
    "AdminService/ListOrgs": ANYONE,
    "AdminService/GetOrg": "AANANNNNUUNNNU",
    "AdminService/CreateUser": PLATFORM,
    "AdminService/ListUsers": PLATFORM,
    "AdminService/GetUser": "ANNNNNNNUUNNNU",
    "AdminService/AddOrgMember": "AANDDDDDUUDDDU",
    "AdminService/ListOrgMembers": "AANADDDDUUDDDU",
    "AdminService/RemoveOrgMember": "AANDDDDDUUDDDU",
    "AdminService/CreateUserToken": "ANNNNNNNUUNNNU",
    "AdminService/RevokeUserToken": "ANNNNNNNUUNNNU",
    "AdminService/CreateWorkKey": "AANDDDDDUUDDDU",
    "AdminService/ListWorkKeys": "AANDDDDDUUDDDU",
    "AdminService/GetWorkKey": "AANNNNNNUUNNNU",
    "AdminService/RevokeWorkKey": "AANNNNNNUUNNNU",
    "AdminService/GetSettings": HUMANS,
    "AdminService/UpdateSettings": PLATFORM,
    # --------------------------------------------------------------- WorkCoordinatorService
    "WorkCoordinatorService/CreateWorkCoordinator": "AANDDDDDUUDDDU",
    "WorkCoordinatorService/ListWorkCoordinators": ANYONE,
    "WorkCoordinatorService/GetWorkCoordinator": READ,
    "WorkCoordinatorService/UpdateWorkCoordinator": CONFIGURE,
    "WorkCoordinatorService/GetView": READ,
    "WorkCoordinatorService/Explain": READ,
    "WorkCoordinatorService/ListEvents": READ,
    "WorkCoordinatorService/GetDigest": READ,
    "WorkCoordinatorService/GetUsage": READ,
    "WorkCoordinatorService/GetBudget": READ,
    "WorkCoordinatorService/ListPendingActions": READ,
    "WorkCoordinatorService/ResolvePendingAction": "nnNDDDDNUUNNDU",
    "WorkCoordinatorService/CreateGrant": CONFIGURE,
    "WorkCoordinatorService/ListGrants": "AANADDDNUUNNDU",
    "WorkCoordinatorService/RevokeGrant": CONFIGURE,
    "WorkCoordinatorService/GetChildSummary": CHILD_READ,
    "WorkCoordinatorService/ListChildEscalations": CHILD_READ,
    "WorkCoordinatorService/AssignChildWork": CHILD_WRITE,
    "WorkCoordinatorService/SteerChildWork": CHILD_WRITE,
    "WorkCoordinatorService/EscalateChildWork": CHILD_WRITE,
    # --------------------------------------------------------------- LaneService
    "LaneService/CreateLane": WRITE,
    "LaneService/ListLanes": READ,
    "LaneService/GetLane": READ,
    "LaneService/UpdateLane": WRITE,
    "LaneService/PauseLane": WRITE,
    "LaneService/ResumeLane": WRITE,
    "LaneService/CancelLane": WRITE,
    "LaneService/AddBlocker": WRITE,
    "LaneService/ResolveBlocker": WRITE,
    "LaneService/LinkTicket": WRITE,
    "LaneService/CreateItem": WRITE,
    "LaneService/GetItem": READ,
    "LaneService/ApproveItem": DECIDE,
    "LaneService/DenyItem": DECIDE,
    "LaneService/ResumeItem": DECIDE,
    "LaneService/CancelItem": WRITE,
    "LaneService/RetryItem": "FFNDDDDNUUNNDU",
    # --------------------------------------------------------------- WorkerService
    "WorkerService/ReportWorker": LEASE,
    "WorkerService/ListWorkers": READ,
    "WorkerService/ForgetWorker": CONFIGURE,
    "WorkerService/Lease": LEASE,
    "WorkerService/Start": LEASE,
    "WorkerService/Heartbeat": LEASE,
    "WorkerService/Complete": LEASE,
    "WorkerService/Fail": LEASE,
    "WorkerService/Checkpoint": LEASE,
    "WorkerService/Release": LEASE,
    "WorkerService/BatchHeartbeat": LEASE,
    "WorkerService/BatchComplete": LEASE,
    "WorkerService/BatchFail": LEASE,
    # --------------------------------------------------------------- FeedService
    "FeedService/Watch": READ,
    # --------------------------------------------------------------- MaintenanceService
    "MaintenanceService/ListMaintenanceTargets": "ADDDDDDDUUDDAU",
    # An org admin may run a recovery pass on its own coordinator (it holds every access).
    "MaintenanceService/RunMaintenance": "AANDDDDNUUNNAU",
    "MaintenanceService/AcquireLeadership": SERVICE,
    "MaintenanceService/ReleaseLeadership": SERVICE,
    "MaintenanceService/GetMailDue": SERVICE,
    "MaintenanceService/MarkMailSent": SERVICE,
    "MaintenanceService/DeliverWebhooks": SERVICE,
    # --------------------------------------------------------------- SessionService
    "SessionService/CreateLoginCode": PLATFORM,
    # Needs no credential: the one-time code is the credential (whatever else is sent).
    "SessionService/ExchangeLoginCode": "AAAAAAAAAAAAAA",
    # Needs no credential either: the id_token is the credential, verified by the coordinator
    # whoever calls; a forged one is refused for all (valid ones: tenancy/test_oidc.py).
    "SessionService/ExchangeIdToken": "UUUUUUUUUUUUUU",
    # Bearer callers have no session to show or end.
    "SessionService/GetSession": "NNNNNNNNUUNNNU",
    "SessionService/EndSession": "NNNNNNNNUUNNNU",
    # --------------------------------------------------------------- TrackerService
    # Org admins and platform admins; never work keys (a credential goes in, never out).
    "TrackerService/CreateTrackerConnection": CONFIGURE,
    "TrackerService/ListTrackerConnections": CONFIGURE,
    "TrackerService/UpdateTrackerConnection": "nnNDDDDNUUNNDU",
    "TrackerService/DeleteTrackerConnection": "nnNDDDDNUUNNDU",
    # --------------------------------------------------------------- NotificationService
    # Org admins and platform admins; never work keys (a secret comes out once, on creation).
    "NotificationService/CreateWebhook": CONFIGURE,
    "NotificationService/ListWebhooks": CONFIGURE,
    "NotificationService/UpdateWebhook": "nnNDDDDNUUNNDU",
    "NotificationService/DeleteWebhook": "nnNDDDDNUUNNDU",
    "NotificationService/ListDeliveries": "nnNDDDDNUUNNDU",
    "NotificationService/Redeliver": "nnNDDDDNUUNNDU",
}

# Services answered by another process: RecoveryService runs in the recovery service, which
# forwards the caller's credential to MaintenanceService (rows above) and lets the coordinator
# decide; tests/e2e/test_grpc.py drives it end to end.
OTHER_PROCESS = {"RecoveryService"}

API_MODULES = (
    admin_pb2,
    feed_pb2,
    lane_pb2,
    maintenance_pb2,
    notification_pb2,
    recovery_pb2,
    session_pb2,
    tracker_pb2,
    work_coordinator_pb2,
    worker_pb2,
)


def all_methods() -> list[tuple[str, Any, Any]]:
    """(``Service/Method``, request class, response class) of every RPC in the contract."""
    found = []
    for module in API_MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                found.append(
                    (
                        f"{service.name}/{method.name}",
                        message_class(method.input_type),
                        message_class(method.output_type),
                    )
                )
    return sorted(found, key=lambda row: row[0])


def message_class(descriptor: Any) -> Any:
    for module in API_MODULES:
        if descriptor.file.name == module.DESCRIPTOR.name:
            return getattr(module, descriptor.name)
    raise LookupError(descriptor.full_name)


# ------------------------------------------------------------------------------ running a cell


def outcome(error: WorkcoordError | None) -> str:
    if error is None:
        return "A"
    reason = error.reason
    if reason == "UNAUTHENTICATED":
        return "U"
    if reason == "PERMISSION_DENIED":
        return "D"
    if reason == "NOT_FOUND":
        # ``n``: authorization passed and the made-up record itself was not found.
        made_up = any(
            what in error.message for what in ("pending action", "tracker connection", "webhook")
        )
        return "n" if made_up else "N"
    if error.code.name == "FAILED_PRECONDITION":
        return "F"
    return f"{reason}: {error.message}"


async def call(
    client: WorkcoordClient, name: str, request: Message, response_class: Any, streaming: bool
) -> WorkcoordError | None:
    path = f"/workcoord.api.v1.{name}"
    try:
        if streaming:
            stream = client.channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response_class.FromString,
            )(request)
            try:
                iterator = stream.__aiter__()
                await asyncio.wait_for(iterator.__anext__(), timeout=10)
            finally:
                stream.cancel()
        else:
            await client.channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response_class.FromString,
            )(request)
    except WorkcoordError as err:
        return err
    return None
