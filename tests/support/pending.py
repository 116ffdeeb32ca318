"""SERVER SIDE PENDING: methods of the contract whose coordinator side has not landed yet.

The coordinator answers them UNIMPLEMENTED for every caller. Tests that walk every method skip
their usual expectations for these and check that instead, so an entry can never hide a method
that already does something. Whoever implements one removes it here (and gives it its row in
the authorization matrix).
"""

from __future__ import annotations

__all__ = ["SERVER_SIDE_PENDING"]

SERVER_SIDE_PENDING = frozenset({"WorkerService/ForgetWorker"})
