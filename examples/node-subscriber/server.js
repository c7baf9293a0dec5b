// A Jobwire event subscriber in plain Node.js (node:http). Each delivery is verified with the
// `standardwebhooks` npm package (401 when its signature does not verify), handled, then
// acknowledged with a 2xx; any other answer, and Jobwire sends the event again. Delivery is at
// least once, so an event may come twice: dedupe on its id (also the `webhook-id` header).
//
//   npm ci && JOBWIRE_SUBSCRIPTION_SECRET=whsec_… PORT=3001 node server.js
"use strict";

const http = require("node:http");
const { Webhook } = require("standardwebhooks");

if (!process.env.JOBWIRE_SUBSCRIPTION_SECRET) {
  console.error("JOBWIRE_SUBSCRIPTION_SECRET is not set: the whsec_… secret of the subscription");
  process.exit(2);
}
const webhook = new Webhook(process.env.JOBWIRE_SUBSCRIPTION_SECRET);
const port = Number(process.env.PORT || 3001);
const handled = new Set(); // the ids of the events handled: a unique key in your database, in production

function handle(event) {
  if (handled.has(event.id)) return; // a repeat: handled already
  console.log(`${event.id} ${event.type} ${event.data.execution_id}`);
  handled.add(event.id);
}

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    let event;
    try {
      event = webhook.verify(Buffer.concat(chunks), req.headers); // the raw bytes, as signed
    } catch (err) {
      res.writeHead(401).end(`signature not verified: ${err.message}`);
      return;
    }
    try {
      handle(event);
      res.writeHead(204).end(); // acknowledged: not sent again
    } catch (err) {
      console.error(err);
      res.writeHead(500).end(); // sent again after 1 s, doubling up to 10 minutes
    }
  });
}).listen(port, "127.0.0.1", () => console.log(`listening on ${port}`));
