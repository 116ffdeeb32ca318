"""Request ids of creates, unique within their scope, and the installation's own secrets."""

from __future__ import annotations

import pytest

from workcoord.coordinator.domain.ports import RequestRecord, Store

from .records import T0, at


@pytest.mark.port("insert_request", "find_request")
async def test_a_request_id_is_found_only_in_its_own_scope(store: Store) -> None:
    first = RequestRecord("org/acme/work-coordinators", "req-1", "ab" * 32, "wc_a", T0)
    async with store.write() as tx:
        await tx.insert_request(first)
        # The same id in another org's scope is another request.
        await tx.insert_request(
            RequestRecord("org/beta/work-coordinators", "req-1", "cd" * 32, "wc_b", at(1))
        )
    async with store.write() as tx:
        assert await tx.find_request("org/acme/work-coordinators", "req-1") == first
        other = await tx.find_request("org/beta/work-coordinators", "req-1")
        assert other is not None and other.resource_id == "wc_b"
        assert await tx.find_request("org/acme/work-coordinators", "req-2") is None
        assert await tx.find_request("org/gamma/work-coordinators", "req-1") is None


@pytest.mark.port("installation_secret")
async def test_the_first_secret_kept_is_the_one_every_caller_gets(store: Store) -> None:
    async with store.write() as tx:
        assert await tx.installation_secret("page-token", "first") == "first"
    async with store.write() as tx:
        assert await tx.installation_secret("page-token", "second") == "first"
        assert await tx.installation_secret("other", "third") == "third"
