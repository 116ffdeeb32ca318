"""The webhook sender loop, run by the recovery leader.

While this replica leads, :meth:`WebhookSender.run_once` asks the coordinator to send what the
outbox has due (``DeliverWebhooks``): the coordinator POSTs each delivery signed, in revision
order per webhook, and records how it went (the secrets never leave it). With nothing due the
call waits on the coordinator (up to :attr:`WebhookSender.wait_seconds`) for a commit that
writes a delivery, so a delivery goes out within milliseconds of its event's commit, and the
loop calls again at once. Only the leader calls, so N replicas send once; a delivery is
recorded only after its answer, so a sender killed mid-delivery sends it again (same
``webhook-id``) and loses nothing.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import grpc
import grpc.aio

from workcoord.api.v1 import maintenance_pb2
from workcoord.kit.wire import bearer_metadata

if TYPE_CHECKING:
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub

__all__ = ["WebhookSender"]

_log = logging.getLogger(__name__)
_ERROR_PAUSE_SECONDS = 1.0
_LOG_INTERVAL_SECONDS = 30.0


class WebhookSender:
    """One ``DeliverWebhooks`` call per round; :attr:`pause_seconds` says how long to wait
    before the next (0 after a call that answered, a second after an error)."""

    def __init__(
        self,
        maintenance: MaintenanceServiceAsyncStub,
        *,
        service_key: str,
        public_url: str | None = None,
        wait_seconds: float = 10.0,
    ) -> None:
        self._maintenance = maintenance
        self._metadata = bearer_metadata(service_key)
        self._public_url = public_url or ""
        self.wait_seconds = wait_seconds
        self.pause_seconds = 0.0
        self.tried_total = 0
        self._last_log = 0.0

    async def run_once(self) -> int:
        """Ask the coordinator to send what is due (waiting for it); how many were tried."""
        request = maintenance_pb2.DeliverWebhooksRequest(
            wait_seconds=self.wait_seconds, public_url=self._public_url
        )
        try:
            response = await self._maintenance.DeliverWebhooks(
                request, metadata=self._metadata, timeout=self.wait_seconds + 60.0
            )
        except grpc.aio.AioRpcError as exc:
            self.pause_seconds = _ERROR_PAUSE_SECONDS
            now = time.monotonic()
            if now - self._last_log >= _LOG_INTERVAL_SECONDS:
                self._last_log = now
                _log.warning("webhook deliveries: %s %s", exc.code().name, exc.details())
            return 0
        self.pause_seconds = 0.0
        tried = int(response.tried)
        self.tried_total += tried
        return tried
