"""The web UI the gateway serves: pages for org members and platform admins, live over the feed.

Pages and their static files (plain ES modules, one stylesheet) live in ``web/static/`` and are
packaged with the gateway wheel. :class:`WebPages` wraps the API's ASGI callable; see
:mod:`workcoord.gateway.web.pages` for the routes.
"""

from __future__ import annotations

from workcoord.gateway.web.assets import ASSET_PREFIX, CONTENT_SECURITY_POLICY
from workcoord.gateway.web.pages import ADMIN_PAGE, SIGN_IN_PAGE, WebPages, org_page

__all__ = [
    "ADMIN_PAGE",
    "ASSET_PREFIX",
    "CONTENT_SECURITY_POLICY",
    "SIGN_IN_PAGE",
    "WebPages",
    "org_page",
]
