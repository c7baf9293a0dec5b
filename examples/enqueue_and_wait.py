"""Enqueue one job with the SDK, wait for it to finish, print its result.

    pip install ./sdk/python
    python examples/enqueue_and_wait.py --url http://127.0.0.1:8000 --handler echo --payload '{"hello": "world"}'

Prints the execution id and its final state, then its result as JSON (the last line); exits 1
when the job did not succeed or Jobwire refused it (the reason on stderr). Typed: tests/sdk/
test_typing.py runs `mypy --strict` on it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from jobwire import JobwireClient, ProblemError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("JOBWIRE_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("JOBWIRE_API_KEY"))
    parser.add_argument("--handler", default="echo")
    parser.add_argument("--payload", type=json.loads, default={"hello": "world"}, help="JSON")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    args = parser.parse_args()

    with JobwireClient(args.url, api_key=args.api_key) as client:
        try:
            execution = client.jobs.enqueue(args.handler, args.payload)
            print(f"enqueued {execution.id}")
            done = client.executions.wait(execution.id, timeout=args.timeout)
        except ProblemError as refused:
            print(f"refused: {refused}", file=sys.stderr)
            return 1
    print(f"{done.state} after {done.attempt + 1} attempt(s)")
    if done.state != "SUCCEEDED":
        print(f"{done.error_type}: {done.last_error}", file=sys.stderr)
        return 1
    print(json.dumps(done.result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
