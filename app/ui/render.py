"""Rendering the dashboard's pages: one Jinja2 environment (autoescaped), the filters the
templates share, flash messages, and form bodies read without python-multipart."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from app.ui import sessions
from app.domain.access import Scope
from app.ui.access import COOKIE_PATH, Viewer, check_csrf, keep_browser, require, viewer
from app.ui.context import ui_of
from app.ui.nav import NAV

FLASH_COOKIE = "jobwire_flash"
# The pages load nothing from elsewhere, run no inline script and are never framed (clickjacking);
# inline style attributes only (the progress bar's widths).
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
FLASH_SECONDS = 60
MAX_FORM_BYTES = 1_000_000


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def seconds_text(seconds: float | None) -> str:
    """3 ms, 2.4 s, 5 min 3 s, 2 h 10 min, 3 d 4 h."""
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {s} s"
    hours, m = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {m} min"
    days, h = divmod(hours, 24)
    return f"{days} d {h} h"


def _ago(value: datetime | None) -> str:
    if value is None:
        return "—"
    delta = time.time() - value.timestamp()
    return f"in {seconds_text(-delta)}" if delta < 0 else f"{seconds_text(delta)} ago"


def _json(value: Any) -> str:
    """Formatted JSON, as text (the template escapes it like any other)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _query(params: Mapping[str, Any], **changes: Any) -> str:
    """The query string of `params` with `changes` (None removes a key); empty values left out."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


ENV = Environment(loader=PackageLoader("app.ui", "templates"), autoescape=select_autoescape(default=True),
                  trim_blocks=True, lstrip_blocks=True)
ENV.filters.update(when=_when, ago=_ago, seconds=seconds_text, json=_json)
ENV.globals.update(nav=NAV, query=_query)


def render(request: Request, viewer: Viewer | None, template: str, status: int = 200, **context: Any) -> Response:
    flash = take_flash(request)
    html = ENV.get_template(template).render(request=request, viewer=viewer, flash=flash, path=request.url.path,
                                             **context)
    response = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
    response.headers["cache-control"] = "no-store"
    if flash is not None:
        response.delete_cookie(FLASH_COOKIE, path=COOKIE_PATH)
    keep_browser(response, request, viewer)
    return response


def take_flash(request: Request) -> dict[str, str] | None:
    key = sessions.derive(ui_of(request).server_key, "flash")
    payload = sessions.verify(key, request.cookies.get(FLASH_COOKIE), now=time.time())
    if payload is None or not isinstance(payload.get("m"), str):
        return None
    return {"message": payload["m"], "kind": str(payload.get("t", "ok"))}


def back(request: Request, location: str, message: str, kind: str = "ok",
         viewer: Viewer | None = None) -> Response:
    """303 to `location` (a /ui path), with a flash message for the next page."""
    if not location.startswith("/ui") or location.startswith("//"):
        location = "/ui"
    response = RedirectResponse(location, status_code=303)
    key = sessions.derive(ui_of(request).server_key, "flash")
    value = sessions.sign(key, {"m": message[:500], "t": kind}, now=time.time(), lifetime=FLASH_SECONDS)
    response.set_cookie(FLASH_COOKIE, value, max_age=FLASH_SECONDS, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    keep_browser(response, request, viewer)
    return response


async def form(request: Request) -> dict[str, list[str]]:
    """A form-encoded body (application/x-www-form-urlencoded), each field with all its values."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)


def first(fields: Mapping[str, list[str]], name: str) -> str | None:
    values = fields.get(name)
    return values[0] if values else None


async def acting(request: Request, scope: Scope) -> tuple[Viewer, dict[str, list[str]]]:
    """A state-changing form's post: its viewer and its fields, once its CSRF token is checked and
    the viewer's key has `scope` (Refused, 403, else)."""
    fields = await form(request)
    who = await viewer(request)
    check_csrf(first(fields, "csrf"), who.csrf)
    require(who, scope)
    return who, fields
