"""A handler that accepts every job (202) and prints it, one JSON line per attempt, so that you
can report back by hand with curl (docs/guides/handler-http.md shows how).

    JOBWIRE_HANDLER_SECRET=whsec_... python examples/accepting_handler.py --port 9001 > /tmp/jobs.jsonl

Without a secret it skips signature verification (for a first try only).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import os

from aiohttp import web


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Standard Webhooks: HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>"."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(f"v1,{expected}", sig) for sig in headers["webhook-signature"].split())


async def accept(request: web.Request) -> web.Response:
    body = await request.read()
    secret = os.environ.get("JOBWIRE_HANDLER_SECRET")
    if secret and not verify(secret, dict(request.headers), body):
        # Jobwire records error.type as the attempt's error_type and error.message as its error.
        return web.json_response({"error": {"type": "bad_signature", "message": "no signature matches the secret"}},
                                 status=401)
    print(body.decode(), flush=True)  # the job, with its callback URL and token
    return web.Response(status=202)  # "I have it; I will report through the callback"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9001)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_post("/{path:.*}", accept)
    web.run_app(app, host="127.0.0.1", port=args.port, access_log=None, print=lambda *_: None)


if __name__ == "__main__":
    main()
