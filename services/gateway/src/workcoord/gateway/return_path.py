"""Where a browser goes back to after signing in: ``/sign-in?next=<path>``.

A page that sends an anonymous visitor to sign in names itself in ``next``; the one-time code
form (``/login?code=…&next=…``) and OpenID Connect (``/login/oidc?next=…``, kept in the signed
flow cookie bound to the login's ``state``) honour it once the session is open.

``next`` is attacker-controlled text that ends up in a ``Location`` header, so only a
same-origin absolute path is kept (:func:`return_path`): it starts with one ``/`` (never
``//host`` nor ``/\\host``, which browsers read as another origin), has no scheme, is made
only of the characters RFC 3986 allows in a URL (so no backslash, control character, space,
quote, angle bracket or non-ASCII character: those come percent-encoded), is at most
:data:`MAX_RETURN_PATH` characters long, and is not a sign-in endpoint itself (no loop, no
login code planted in it). Anything else is ``/``.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

__all__ = ["MAX_RETURN_PATH", "NEXT_PARAM", "return_path", "sign_in_location"]

NEXT_PARAM = "next"
MAX_RETURN_PATH = 2048
# RFC 3986's unreserved and reserved characters and "%": what an encoded URL is made of.
_URL_TEXT = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
# Sign-in endpoints: a return to one of them would loop, or carry someone else's login code.
_NEVER = ("/login", "/sign-in")


def return_path(value: str | None) -> str:
    """``value`` if it is a safe same-origin path to return to, else ``/``."""
    if not value or len(value) > MAX_RETURN_PATH:
        return "/"
    if not value.startswith("/") or value.startswith("//"):
        return "/"
    if not _URL_TEXT.fullmatch(value):
        return "/"
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return "/"
    path = parts.path
    if any(path == never or path.startswith(never + "/") for never in _NEVER):
        return "/"
    return value


def sign_in_location(sign_in_page: str, next_path: str, **params: str) -> str:
    """The sign-in page's URL with ``params`` and, unless it is ``/``, ``next``."""
    query = [f"{name}={quote(value, safe='')}" for name, value in params.items() if value]
    kept = return_path(next_path)
    if kept != "/":
        query.append(f"{NEXT_PARAM}={quote(kept, safe='')}")
    return f"{sign_in_page}?{'&'.join(query)}" if query else sign_in_page
