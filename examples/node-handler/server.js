// A Jobwire handler in plain Node.js (node:http, no framework), the asynchronous kind: it
// verifies each dispatch with the official `standardwebhooks` npm package (401 when the
// signature does not verify), answers 202 at once, counts the words of `payload.text` in the
// background, reporting progress through the progress callback, then reports the result through
// the completion callback (Node's built-in fetch). A payload without a string `text` is
// reported as failed, not retryable (error type `invalid_payload`): it dead-letters at once.
//
// Run it, from this directory, with `jobwire serve` listening on 127.0.0.1:8000 (Node.js 18+):
//
//   npm ci
//
//   # Register the handler; the response to a create is the only one showing its secret:
//   curl -s -X PUT http://127.0.0.1:8000/v1/handlers/wordcount \
//     -H 'content-type: application/json' \
//     -d '{"url": "http://127.0.0.1:3000/wordcount"}' > /tmp/wordcount.json
//
//   # Start it with that secret (it prints "listening on 3000" when ready):
//   JOBWIRE_HANDLER_SECRET=$(node -p 'require("/tmp/wordcount.json").secret') PORT=3000 node server.js &
//
//   # Enqueue a job, then read its execution (its id is in the first answer):
//   curl -s -X POST http://127.0.0.1:8000/v1/jobs -H 'content-type: application/json' \
//     -d '{"handler": "wordcount", "payload": {"text": "the quick brown fox\njumps over the lazy dog"}}'
//   curl -s http://127.0.0.1:8000/v1/executions/<id>
//   # {…,"state":"SUCCEEDED",…,"result":{"top":[{"word":"the","count":2},{"word":"brown","count":1},…],
//   #  "lines":2,"words":9,"distinct":8},"progress":{"total":2,"succeeded":2,…,"percentage":100},…}
//
// Environment: JOBWIRE_HANDLER_SECRET (required: the `whsec_…` secret Jobwire returned when the
// handler was registered), PORT (default 3000), HOST (default 127.0.0.1). Every POST path is
// the handler, so the path in the registered URL is yours to choose.
"use strict";

const http = require("node:http");
const { Webhook } = require("standardwebhooks");

const secret = process.env.JOBWIRE_HANDLER_SECRET;
const port = Number(process.env.PORT || 3000);
const host = process.env.HOST || "127.0.0.1";
if (!secret) {
  console.error("JOBWIRE_HANDLER_SECRET is not set: use the whsec_… secret Jobwire returned at registration");
  process.exit(2);
}
const webhook = new Webhook(secret);

const MAX_BODY_BYTES = 16 * 1024 * 1024; // Jobwire's default payload cap is well below this
const LINES_PER_PROGRESS = 1000; // one progress report (which also moves the deadline) per this many lines
const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu; // "don't" and "well-known" are one word each

function reply(res, status, document) {
  const body = document === undefined ? "" : JSON.stringify(document);
  const headers = { "content-length": Buffer.byteLength(body) };
  if (body) headers["content-type"] = "application/json";
  res.writeHead(status, headers);
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") {
    res.setHeader("allow", "POST");
    reply(res, 405, { error: "POST only" });
    return;
  }
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  });
  req.on("end", () => {
    if (size > MAX_BODY_BYTES) {
      reply(res, 413, { error: `request body over ${MAX_BODY_BYTES} bytes` });
      return;
    }
    // Verify the raw bytes as sent, before any parsing; verify() returns the parsed body.
    let job;
    try {
      job = webhook.verify(Buffer.concat(chunks), req.headers); // throws WebhookVerificationError
    } catch (err) {
      reply(res, 401, { error: `signature not verified: ${err.message}` });
      return;
    }
    // webhook-id is the execution id, the same on every attempt; the attempt is jobwire-attempt
    // (and the body's `attempt`). A later attempt of an execution still running here means
    // Jobwire gave up on the earlier one, whose reports now get 409 and stop it.
    console.log(`execution ${job.execution_id} attempt ${job.attempt}: accepted`);
    reply(res, 202); // "I have it; I will report through the callback"
    work(job).catch((err) => {
      console.error(`execution ${job.execution_id} attempt ${job.attempt}: ${err.message}`);
    });
  });
});

// The job itself: count the words of payload.text, line by line, with progress reports.
async function work(job) {
  const { callback } = job;
  const label = `execution ${job.execution_id} attempt ${job.attempt}`;
  const text = job.payload !== null && typeof job.payload === "object" ? job.payload.text : undefined;
  if (typeof text !== "string") {
    await callBack(callback, "complete", {
      outcome: "failed",
      error: { type: "invalid_payload", message: "payload.text must be a string" },
      retryable: false, // the same payload would fail again: dead-letter it now
    });
    console.log(`${label}: failed (payload.text is not a string)`);
    return;
  }
  const lines = text.split(/\r\n|\r|\n/);
  const counts = new Map();
  let words = 0;
  for (let start = 0; start < lines.length; start += LINES_PER_PROGRESS) {
    const end = Math.min(start + LINES_PER_PROGRESS, lines.length);
    for (const line of lines.slice(start, end)) {
      for (const [match] of line.matchAll(WORD)) {
        const word = match.toLowerCase();
        counts.set(word, (counts.get(word) || 0) + 1);
        words += 1;
      }
    }
    const answer = await callBack(callback, "progress", {
      total: lines.length,
      succeeded: end,
      status: `counted ${end} of ${lines.length} lines`,
    });
    if (answer === null || answer.cancel_requested) {
      console.log(`${label}: stopped (cancelled, or a newer attempt owns the execution)`);
      return;
    }
  }
  const top = [...counts]
    .sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, 5)
    .map(([word, count]) => ({ word, count }));
  const result = { words, distinct: counts.size, lines: lines.length, top };
  if ((await callBack(callback, "complete", { outcome: "succeeded", result })) !== null) {
    console.log(`${label}: succeeded, ${words} words`);
  }
}

// POST {callback.url}/<what> with the callback token: the answer's JSON, or null on 409 (this
// attempt is no longer the execution's current one: stop). Retries a lost connection, a 429 and
// a 5xx a few times (Jobwire's 503 says when in Retry-After); any other answer throws.
async function callBack(callback, what, body, tries = 5) {
  for (let attempt = 1; ; attempt += 1) {
    let response;
    try {
      response = await fetch(`${callback.url}/${what}`, {
        method: "POST",
        headers: { authorization: `Bearer ${callback.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      if (attempt >= tries) throw new Error(`${what} callback: ${err.message}`);
      await sleep(2 ** attempt * 250);
      continue;
    }
    const text = await response.text();
    if (response.ok) return text ? JSON.parse(text) : {};
    if (response.status === 409) return null;
    if ((response.status === 429 || response.status >= 500) && attempt < tries) {
      const retryAfter = Number(response.headers.get("retry-after"));
      await sleep(retryAfter > 0 ? retryAfter * 1000 : 2 ** attempt * 250);
      continue;
    }
    throw new Error(`${what} callback: HTTP ${response.status}: ${text}`);
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

server.listen(port, host, () => {
  console.log(`listening on ${port}`);
});

// Stop taking dispatches; jobs already accepted finish their reports (for at most 10 s more).
function shutdown() {
  server.close();
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 10_000).unref();
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
