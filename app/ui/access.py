"""Who is looking at the dashboard, and what they may do: sign-in, the session, CSRF.

With API keys configured (a bootstrap key in JOBWIRE_API_KEYS, or any key in the database, as for
the API: app/api/auth.py), every page asks for a session: a cookie set by the sign-in page, signed
with a key derived from the server key every node shares (app/ui/sessions.py), HttpOnly,
SameSite=Strict, limited to /ui, valid SESSION_SECONDS. It holds the key's id, never the key: a
database key's id, read again on each request (a deleted key's session ends at once), or for a
bootstrap key a MAC of it under the server key (the key itself is never in the cookie). The key's
scopes decide what the pages offer: without `operate`, the action buttons are disabled and their
POSTs answer 403.

Every state-changing form carries a CSRF token, an HMAC of the session's random nonce (or, with
auth off, of a random per-browser cookie's); a POST without it, or with another, answers 403.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from urllib.parse import quote
from uuid import UUID

from starlette.requests import Request
from starlette.responses import Response

from app.domain.access import FULL_ACCESS, Principal, Scope
from app.domain.errors import Forbidden
from app.services.api_keys import ApiKeyService
from app.ui import sessions
from app.ui.context import ui_of

SESSION_COOKIE = "jobwire_session"
BROWSER_COOKIE = "jobwire_browser"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 12 * 3600
BROWSER_SECONDS = 365 * 24 * 3600
CSRF_FIELD = "csrf"


class SignInRequired(Exception):
    """The page needs a session: answered with a redirect to the sign-in page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class Refused(Exception):
    """A form refused (a missing or wrong CSRF token, a scope the key lacks): 403, said on a page."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class Viewer:
    principal: Principal
    auth_on: bool  # keys are configured: a session is needed
    name: str | None  # the signed-in key's name
    csrf: str  # the token every form of this viewer carries
    browser: str | None  # a new per-browser nonce to set on the response (its first page)

    @property
    def queues(self) -> frozenset[str] | None:
        return self.principal.queues

    def may(self, scope: Scope) -> bool:
        try:
            self.principal.require(scope)
        except Forbidden:
            return False
        return True

    @property
    def can_operate(self) -> bool:
        return self.may(Scope.OPERATE)

    @property
    def can_admin(self) -> bool:
        """Schedules' trigger and delete, subscriptions: what the API keeps to scope admin."""
        return self.may(Scope.ADMIN)


def _keys(request: Request) -> tuple[bytes, ...]:
    return request.app.state.api_keys


def _key_service(request: Request) -> ApiKeyService:
    return request.app.state.api_key_service


async def auth_on(request: Request) -> bool:
    """As the API decides it: keys configured, or any key in the database."""
    return bool(_keys(request)) or not await _key_service(request).is_open()


def _key(request: Request, purpose: str) -> bytes:
    return sessions.derive(ui_of(request).server_key, purpose)


def bootstrap_id(request: Request, key: bytes) -> str:
    """What a session of bootstrap key `key` holds of it: its MAC under the server key."""
    return "b:" + sessions.mac(_key(request, "bootstrap"), key.decode("utf-8", "surrogatepass"))[:22]


def _csrf(request: Request, nonce: str) -> str:
    return sessions.mac(_key(request, "csrf"), nonce)


def where_from(request: Request) -> str:
    """The path and query of this request: where the sign-in page leads back to."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


async def viewer(request: Request) -> Viewer:
    """The viewer of this request; SignInRequired when keys are configured and it has no session
    (or one whose key is gone)."""
    browser = request.cookies.get(BROWSER_COOKIE)
    fresh = None
    if not browser or len(browser) > 64:
        browser = fresh = secrets.token_urlsafe(16)
    if not await auth_on(request):
        return Viewer(FULL_ACCESS, False, None, _csrf(request, "b:" + browser), fresh)
    session = sessions.verify(_key(request, "session"), request.cookies.get(SESSION_COOKIE), now=time.time())
    principal = None if session is None else await _principal(request, session)
    if principal is None or session is None:
        raise SignInRequired(where_from(request))
    return Viewer(principal, True, session.get("name"), _csrf(request, "s:" + str(session["n"])), fresh)


async def _principal(request: Request, session: dict[str, object]) -> Principal | None:
    key_id = session.get("k")
    if not isinstance(key_id, str) or not isinstance(session.get("n"), str):
        return None
    if key_id.startswith("b:"):
        found = any(hmac.compare_digest(key_id, bootstrap_id(request, k)) for k in _keys(request))
        return FULL_ACCESS if found else None
    try:
        return await _key_service(request).principal_by_id(UUID(key_id))
    except ValueError:
        return None


async def sign_in(request: Request, token: str) -> tuple[str, str] | None:
    """The signed session cookie and the key's name for API key `token`, or None when it is no
    key, or one that cannot read."""
    token = token.strip()
    principal: Principal | None = None
    key_id = name = None
    for key in _keys(request):
        if hmac.compare_digest(token.encode("utf-8", "surrogatepass"), key):
            principal, key_id, name = FULL_ACCESS, bootstrap_id(request, key), "bootstrap key"
    if principal is None and token:
        principal = await _key_service(request).principal_for(token)
        if principal is not None:
            key_id, name = str(principal.key_id), principal.name
    if principal is None or key_id is None:
        return None
    try:
        principal.require(Scope.READ)
    except Forbidden:
        return None
    payload = {"k": key_id, "n": secrets.token_urlsafe(16), "name": name}
    return sessions.sign(_key(request, "session"), payload, now=time.time(), lifetime=SESSION_SECONDS), name or ""


def set_session(response: Response, request: Request, value: str) -> None:
    response.set_cookie(SESSION_COOKIE, value, max_age=SESSION_SECONDS, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def end_session(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")


def keep_browser(response: Response, request: Request, viewer: Viewer | None) -> None:
    """Sets the per-browser nonce cookie on the first page a browser sees."""
    if viewer is not None and viewer.browser is not None:
        set_browser(response, request, viewer.browser)


def set_browser(response: Response, request: Request, nonce: str) -> None:
    response.set_cookie(BROWSER_COOKIE, nonce, max_age=BROWSER_SECONDS, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def browser_csrf(request: Request) -> tuple[str, str | None]:
    """The CSRF token of the sign-in form (no session yet): bound to the browser's nonce cookie;
    and the nonce to set when the browser has none."""
    browser = request.cookies.get(BROWSER_COOKIE)
    fresh = None
    if not browser or len(browser) > 64:
        browser = fresh = secrets.token_urlsafe(16)
    return _csrf(request, "b:" + browser), fresh


def check_csrf(given: str | None, expected: str) -> None:
    if not given or not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode()):
        raise Refused("this form's CSRF token is missing or wrong: reload the page and try again")


def require(viewer: Viewer, scope: Scope) -> None:
    if not viewer.may(scope):
        raise Refused(f"your API key ({viewer.name or 'this key'}) lacks scope {scope.value}, which this action "
                      "needs")


def sign_in_location(next_path: str) -> str:
    return "/ui/sign-in?next=" + quote(next_path, safe="")
