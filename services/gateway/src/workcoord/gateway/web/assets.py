"""The pages' files, packaged with the gateway (``web/static/``) and served from memory.

Everything the browser loads comes from the gateway itself: no CDN, no remote fonts, no build
step (plain ES modules). The set of files is read once at start-up, so a request can only ever
name one of them (no path is joined from user input). Each answer carries an ``ETag``; a
revalidation that matches answers 304.

Every page response carries a strict Content-Security-Policy: scripts and styles only from
this origin (no inline script or style), connections (``fetch``, the WebSocket feed) only to
it, and no framing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import ClassVar

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["ASSET_PREFIX", "CONTENT_SECURITY_POLICY", "Assets", "page_headers"]

ASSET_PREFIX = "/ui/"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
}


def page_headers() -> dict[str, str]:
    """The security headers of every page and asset."""
    return {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    }


@dataclass(frozen=True)
class _File:
    content: bytes
    media_type: str
    etag: str


@dataclass(frozen=True)
class Assets:
    """The packaged files by name (``org.js``, ``app.css``, ``page.html``, …)."""

    files: dict[str, _File]
    PACKAGE: ClassVar[str] = "workcoord.gateway.web"

    @classmethod
    def load(cls) -> Assets:
        """Read every file of ``web/static/`` (flat: no sub-folders)."""
        folder = resources.files(cls.PACKAGE).joinpath("static")
        files: dict[str, _File] = {}
        for entry in folder.iterdir():
            suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
            media_type = _MEDIA_TYPES.get(suffix)
            if not entry.is_file() or media_type is None:
                continue
            content = entry.read_bytes()
            etag = '"' + hashlib.sha256(content).hexdigest()[:32] + '"'
            files[entry.name] = _File(content, media_type, etag)
        if "page.html" not in files:
            raise RuntimeError("the gateway's web pages are missing from its package")
        return cls(files)

    def asset(self, name: str, request: Request) -> Response:
        """``/ui/<name>``: the file, 304 when the browser's copy is current, else 404."""
        found = self.files.get(name)
        if found is None or name.endswith(".html"):
            return Response("not found", status_code=404, media_type="text/plain")
        headers = {"ETag": found.etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers=headers)
        return Response(found.content, media_type=found.media_type, headers=headers)

    def page(
        self, body: str, title: str, script: str | None = None, fields: dict[str, str] | None = None
    ) -> Response:
        """An HTML page, never cached: the one head and frame of ``page.html`` around the
        body file ``body``, titled ``title``, loading the module ``script`` when given;
        ``<!--{key}-->`` markers replaced by ``fields`` (which the caller has escaped)."""
        module = f'<script type="module" src="{ASSET_PREFIX}{script}"></script>' if script else ""
        parts = {"body": self.files[body].content.decode(), "title": title, "script": module}
        text = self.files["page.html"].content.decode()
        for key, value in [*parts.items(), *(fields or {}).items()]:
            text = text.replace(f"<!--{{{key}}}-->", value)
        return Response(
            text,
            media_type=_MEDIA_TYPES[".html"],
            headers={"Cache-Control": "no-store"},
        )
