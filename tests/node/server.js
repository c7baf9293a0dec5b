// A Jobwire handler in Node.js: verifies each dispatch with the official `standardwebhooks` npm
// package over the raw body, then answers 200 {"result": …}; a bad signature gets 401.
//
//   WEBHOOK_SECRET=whsec_... PORT=9000 node server.js
//
// Run by tests/runtime/test_node_handler.py (after `npm ci` from package-lock.json). It prints
// "listening on <port>" once it takes connections.
"use strict";

const http = require("node:http");
const { Webhook } = require("standardwebhooks");

const secret = process.env.WEBHOOK_SECRET;
const port = Number(process.env.PORT || 9000);
if (!secret) {
  console.error("WEBHOOK_SECRET is not set");
  process.exit(2);
}
const webhook = new Webhook(secret);
const seen = new Set(); // webhook-id values handled: the execution id, the same on every attempt

function reply(res, status, document) {
  const body = JSON.stringify(document);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") {
    reply(res, 405, { error: "POST only" });
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const raw = Buffer.concat(chunks).toString("utf8"); // verify the bytes as sent, before any parsing
    let job;
    try {
      job = webhook.verify(raw, req.headers); // throws WebhookVerificationError
    } catch (err) {
      reply(res, 401, { error: `signature not verified: ${err.message}` });
      return;
    }
    const id = req.headers["webhook-id"];
    const duplicate = seen.has(id);
    seen.add(id);
    reply(res, 200, {
      result: {
        verified: true,
        webhook_id: id,
        attempt: Number(req.headers["jobwire-attempt"]),
        body_attempt: job.attempt,
        duplicate,
        signatures: req.headers["webhook-signature"].split(" ").length,
        payload: job.payload,
      },
    });
  });
});

server.listen(port, "127.0.0.1", () => {
  console.log(`listening on ${port}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
