"""gzip in the gateway's pipeline (``gateway/compression.py``): whole text answers are compressed
when the client accepts gzip, nothing else is, and a streamed answer is never held back."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from workcoord.gateway.compression import MINIMUM_SIZE, GzipText, accepts_gzip
from workcoord.gateway.openapi import openapi_document

GZIP = {"Accept-Encoding": "gzip"}


async def _raw(
    client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None
) -> tuple[httpx.Response, bytes]:
    """The answer and its body as sent (httpx would decode it); with ``headers=None`` the
    request carries no Accept-Encoding at all."""
    request = client.build_request("GET", path, headers=headers)
    if headers is None:
        del request.headers["accept-encoding"]
    response = await client.send(request, stream=True)
    try:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    finally:
        await response.aclose()
    return response, body


def _vary(response: httpx.Response) -> set[str]:
    return {part.strip().lower() for part in response.headers.get("vary", "").split(",")}


async def test_the_openapi_document_is_served_gzipped(client: httpx.AsyncClient) -> None:
    response, body = await _raw(client, "/v1/openapi.json", GZIP)
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in _vary(response)
    assert response.headers["content-type"].startswith("application/json")
    assert int(response.headers["content-length"]) == len(body)
    assert json.loads(gzip.decompress(body)) == openapi_document()


async def test_a_page_module_and_a_page_are_served_gzipped(client: httpx.AsyncClient) -> None:
    plain, identity = await _raw(client, "/ui/board.js")
    assert "content-encoding" not in plain.headers
    response, body = await _raw(client, "/ui/board.js", {"Accept-Encoding": "br, gzip;q=0.8"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["content-type"].startswith("text/javascript")
    assert "accept-encoding" in _vary(response)
    assert gzip.decompress(body) == identity
    # The ETag is the file's whichever the encoding: a revalidation still answers 304.
    assert response.headers["etag"] == plain.headers["etag"]
    again = await client.get(
        "/ui/board.js", headers={**GZIP, "If-None-Match": plain.headers["etag"]}
    )
    assert again.status_code == 304
    page, page_body = await _raw(client, "/sign-in", GZIP)
    assert page.headers["content-encoding"] == "gzip"
    assert b"<html" in gzip.decompress(page_body)


@pytest.mark.parametrize("accept", [None, "identity", "gzip;q=0", "br", "*;q=0"])
async def test_without_gzip_accepted_nothing_is_compressed(
    client: httpx.AsyncClient, accept: str | None
) -> None:
    response, body = await _raw(
        client, "/v1/openapi.json", None if accept is None else {"Accept-Encoding": accept}
    )
    assert response.status_code == 200
    assert "content-encoding" not in response.headers
    # A cache must still keep the two encodings apart.
    assert "accept-encoding" in _vary(response)
    assert json.loads(body) == openapi_document()


async def test_small_answers_go_as_they_are(client: httpx.AsyncClient) -> None:
    response, body = await _raw(client, "/healthz", GZIP)
    assert len(body) < MINIMUM_SIZE
    assert "content-encoding" not in response.headers
    assert json.loads(body) == {"status": "ok"}


def test_accept_encoding_is_read_with_its_q_values() -> None:
    assert accepts_gzip("gzip")
    assert accepts_gzip("deflate, GZIP;q=0.5")
    assert accepts_gzip("*")
    assert accepts_gzip("*;q=0, gzip")
    assert not accepts_gzip("")
    assert not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("gzip;q=0.0, *")
    assert not accepts_gzip("gzip;q=nope")
    assert not accepts_gzip("br, deflate")


class _Streaming:
    """An app that streams two chunks, the second only once the first has reached the
    client: a middleware that held the stream back would never let it finish."""

    def __init__(self, media_type: str) -> None:
        self.media_type = media_type
        self.first_delivered = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", self.media_type.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"x" * 4096, "more_body": True})
        await self.first_delivered.wait()
        await send({"type": "http.response.body", "body": b"y" * 4096, "more_body": False})


@pytest.mark.parametrize("media_type", ["text/event-stream", "application/json"])
async def test_a_streamed_answer_passes_untouched_and_at_once(media_type: str) -> None:
    app = _Streaming(media_type)
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            app.first_delivered.set()

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"accept-encoding", b"gzip")],
    }
    await asyncio.wait_for(GzipText(app)(scope, receive, send), timeout=10)
    assert [m["type"] for m in sent] == [
        "http.response.start",
        "http.response.body",
        "http.response.body",
    ]
    assert b"content-encoding" not in dict(sent[0]["headers"])
    assert sent[1]["body"] == b"x" * 4096 and sent[2]["body"] == b"y" * 4096


async def _through_gzip(method: str, headers: list[tuple[bytes, bytes]]) -> list[Message]:
    """What GzipText sends for an answer of ``headers`` and a large JSON body."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}" * MINIMUM_SIZE})

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": method, "headers": [(b"accept-encoding", b"gzip")]}
    await GzipText(app)(scope, receive, send)
    return sent


async def test_head_and_already_encoded_answers_are_left_alone() -> None:
    json_type = (b"content-type", b"application/json")
    sent = await _through_gzip("GET", [json_type])
    assert dict(sent[0]["headers"])[b"content-encoding"] == b"gzip"  # the control
    for method, headers in [
        ("HEAD", [json_type]),
        ("GET", [json_type, (b"content-encoding", b"br")]),
        ("GET", [json_type, (b"cache-control", b"no-transform")]),
        ("GET", [(b"content-type", b"image/png")]),
    ]:
        sent = await _through_gzip(method, headers)
        assert dict(sent[0]["headers"]).get(b"content-encoding") in (None, b"br"), headers
        assert sent[1]["body"] == b"{}" * MINIMUM_SIZE, (method, headers)
