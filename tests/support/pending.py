"""SERVER SIDE PENDING: methods of the contract whose coordinator side has not landed yet.

The coordinator answers them UNIMPLEMENTED for every caller. Tests that walk every method skip
their usual expectations for these and check that instead, so an entry can never hide a method
that already does something. Whoever implements one removes it here (and gives it its row in
the authorization matrix).

Behaviour pending on existing methods is written as strict expected failures instead:
``LeaseRequest.request_id`` in tests/e2e/test_lease_retry.py.
"""

from __future__ import annotations

__all__ = ["SERVER_SIDE_PENDING"]

SERVER_SIDE_PENDING = frozenset({"WorkerService/ForgetWorker"})
