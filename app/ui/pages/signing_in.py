"""Sign-in (an API key, when keys are configured) and sign-out."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from app.ui.access import (auth_on, browser_csrf, check_csrf, end_session, set_browser, set_session, sign_in,
                           viewer)
from app.ui.render import back, first, form, render

router = APIRouter()


def _next(value: str | None) -> str:
    """Where to go after signing in: a dashboard path only (never another site)."""
    if value and value.startswith("/ui") and not value.startswith("//") and "\\" not in value:
        return value
    return "/ui"


@router.get("/ui/sign-in")
async def sign_in_page(request: Request) -> Response:
    if not await auth_on(request):
        return RedirectResponse("/ui", status_code=303)
    csrf, fresh = browser_csrf(request)
    response = render(request, None, "sign_in.html", csrf=csrf, next=_next(request.query_params.get("next")),
                      error=None)
    if fresh:
        set_browser(response, request, fresh)
    return response


@router.post("/ui/sign-in")
async def sign_in_submit(request: Request) -> Response:
    fields = await form(request)
    csrf, _ = browser_csrf(request)
    check_csrf(first(fields, "csrf"), csrf)
    target = _next(first(fields, "next"))
    signed = await sign_in(request, first(fields, "key") or "")
    if signed is None:
        return render(request, None, "sign_in.html", status=401, csrf=csrf, next=target,
                      error="That is not an API key with scope read (or more).")
    cookie, name = signed
    response = back(request, target, f"Signed in as {name}.")
    set_session(response, request, cookie)
    return response


@router.post("/ui/sign-out")
async def sign_out(request: Request) -> Response:
    fields = await form(request)
    who = await viewer(request)
    check_csrf(first(fields, "csrf"), who.csrf)
    response = back(request, "/ui/sign-in", "Signed out.")
    end_session(response)
    return response
