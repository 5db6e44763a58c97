/**
 * Timeouts and retries: only idempotent calls are retried (GET, DELETE, searches, writes that
 * name their record's id), on a lost connection, a timeout, 429, 502, 503 and 504. A local
 * HTTP server plays the failures; a proxy in front of a real `oam serve` loses the answer of a
 * write that landed, to show that its retry returns the stored record.
 */

import assert from "node:assert/strict";
import { createServer, request as httpRequest, type IncomingMessage, type Server,
  type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";

import {
  APIConnectionError,
  APITimeoutError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  RateLimitError,
  Recallwell,
  ServerError,
} from "recallwell";

import { freePort, startServer, type TestServer } from "./server.js";

type Handler = (req: IncomingMessage, res: ServerResponse, count: number) => void;

/** A local server answering with `handler`; counts the requests it gets. */
async function fake(handler: Handler): Promise<{ url: string; count: () => number;
  close: () => Promise<void> }> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    count += 1;
    req.resume();
    req.on("end", () => handler(req, res, count));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    count: () => count,
    close: () => new Promise((done) => {
      server.closeAllConnections();
      server.close(() => done());
    }),
  };
}

function json(res: ServerResponse, status: number, body: unknown,
  headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

const unavailable = { error: { status: 503, code: "not_ready", message: "not ready" } };
const fast = { retryDelayMs: 1, apiKey: "k" };

describe("retries", () => {
  test("a GET is retried on 503 and 502, then succeeds", async () => {
    const server = await fake((_, res, n) => {
      if (n === 1) json(res, 503, unavailable, { "retry-after": "0" });
      else if (n === 2) json(res, 502, "bad gateway");
      else json(res, 200, { status: "ok" });
    });
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast });
      assert.deepEqual(await client.health(), { status: "ok" });
      assert.equal(server.count(), 3);
    } finally {
      await server.close();
    }
  });

  test("after maxRetries the last error is thrown, with the server's body", async () => {
    const server = await fake((_, res) => json(res, 503, unavailable, { "retry-after": "0" }));
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast, maxRetries: 3 });
      const error = await client.getMemory("m1").catch((e: unknown) => e);
      assert.ok(error instanceof ServerError);
      assert.equal(error.status, 503);
      assert.deepEqual(error.body, unavailable);
      assert.equal(server.count(), 4);
      const once = await client.getMemory("m1", { maxRetries: 0 }).catch((e: unknown) => e);
      assert.ok(once instanceof ServerError);
      assert.equal(server.count(), 5);
    } finally {
      await server.close();
    }
  });

  test("429 is retried; an error body that is not JSON is kept as text", async () => {
    const server = await fake((_, res) => {
      res.writeHead(429, { "content-type": "text/plain", "retry-after": "0" });
      res.end("slow down");
    });
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast, maxRetries: 1 });
      const error = await client.deleteMemory("m1").catch((e: unknown) => e);
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.body, "slow down");
      assert.equal(error.code, "error");
      assert.equal(server.count(), 2);
    } finally {
      await server.close();
    }
  });

  test("a 4xx other than 429 is never retried", async () => {
    const server = await fake((_, res) => json(res, 404,
      { error: { status: 404, code: "not_found", message: "no memory with id 'm1'" } }));
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast });
      await assert.rejects(client.getMemory("m1"), NotFoundError);
      assert.equal(server.count(), 1);
    } finally {
      await server.close();
    }
  });

  test("POSTs without an id of the caller's, and PATCHes, are sent once", async () => {
    const server = await fake((_, res) => json(res, 503, unavailable, { "retry-after": "0" }));
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast });
      const once = [
        client.addMemory({ content: "x", user_id: "alice" }),
        client.createThread({ user_id: "alice" }),
        client.addMessages("t", { messages: [{ role: "user", content: "x" }] }),
        client.addLink({ source_record_id: "a", source_record_type: "fact",
          target_record_id: "b", target_record_type: "fact", relation_type: "r" }),
        client.addImage({ file: new Uint8Array([1, 2, 3]), user_id: "alice" }),
        client.purge(),
        client.updateMemory("m1", { content: "y" }),
        client.updateThread("t", { metadata: null }),
      ];
      for (const [i, call] of once.entries()) {
        await assert.rejects(call, ServerError);
        assert.equal(server.count(), i + 1, `call ${i} was sent more than once`);
      }
      // Idempotent: searches, and writes that name their record's id (3 attempts each).
      const before = server.count();
      await assert.rejects(client.search({ query: "x", user_id: "alice" }), ServerError);
      await assert.rejects(client.searchThread("t", { query: "x" }), ServerError);
      await assert.rejects(client.addMemory({ content: "x", user_id: "alice", memory_id: "m" }),
        ServerError);
      await assert.rejects(client.createThread({ user_id: "alice", thread_id: "t" }), ServerError);
      await assert.rejects(client.addMessages("t", { messages: [{ role: "user", content: "x",
        id: "m" }] }), ServerError);
      await assert.rejects(client.addUser({ id: "alice", information: "x" }), ServerError);
      assert.equal(server.count() - before, 6 * 3);
    } finally {
      await server.close();
    }
  });
});

describe("timeouts, aborts, connections", () => {
  test("no answer within timeoutMs is an APITimeoutError, retried for a GET", async () => {
    const server = await fake(() => { /* never answers */ });
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast, timeoutMs: 100,
        maxRetries: 1 });
      const started = Date.now();
      const error = await client.listUsers().catch((e: unknown) => e);
      assert.ok(error instanceof APITimeoutError, String(error));
      assert.ok(error instanceof APIConnectionError);
      assert.equal(error.status, undefined);
      assert.match(error.message, /GET \/v1\/users: no answer in 100 ms/);
      assert.equal(server.count(), 2);
      assert.ok(Date.now() - started < 5_000);
      await assert.rejects(client.addLink({ source_record_id: "a", source_record_type: "fact",
        target_record_id: "b", target_record_type: "fact", relation_type: "r" },
      { timeoutMs: 50 }), APITimeoutError);
      assert.equal(server.count(), 3);
    } finally {
      await server.close();
    }
  });

  test("the caller's abort rejects with its reason and is not retried", async () => {
    const server = await fake(() => { /* never answers */ });
    try {
      const client = new Recallwell({ baseUrl: server.url, ...fast });
      const controller = new AbortController();
      const call = client.listUsers({}, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error("user gave up")), 50);
      await assert.rejects(call, /user gave up/);
      await new Promise((done) => setTimeout(done, 50));
      assert.equal(server.count(), 1);
      await assert.rejects(client.listUsers({}, { signal: AbortSignal.abort() }));
      assert.equal(server.count(), 1);
    } finally {
      await server.close();
    }
  });

  test("a refused connection is an APIConnectionError after the retries", async () => {
    const port = await freePort();  // nothing listens there
    const client = new Recallwell({ baseUrl: `http://127.0.0.1:${port}`, ...fast });
    const error = await client.getUser("alice").catch((e: unknown) => e);
    assert.ok(error instanceof APIConnectionError && !(error instanceof APITimeoutError));
    assert.match(error.message, /^GET \/v1\/users\/alice: /);
  });

  test("a custom fetch and headers are used", async () => {
    const seen: Request[] = [];
    const client = new Recallwell({
      baseUrl: "http://memory.invalid", apiKey: "secret", headers: { "x-trace": "1" },
      fetch: async (input, init) => {
        seen.push(new Request(input, init));
        return new Response(JSON.stringify({ status: "ok" }), {
          headers: { "content-type": "application/json" } });
      },
    });
    await client.health();
    assert.equal(seen[0]?.url, "http://memory.invalid/healthz");
    assert.equal(seen[0]?.headers.get("authorization"), "Bearer secret");
    assert.equal(seen[0]?.headers.get("x-trace"), "1");
    assert.throws(() => new Recallwell({ baseUrl: "" }), TypeError);
  });
});

describe("a write whose answer was lost", () => {
  let server: TestServer;
  let proxy: Server;
  let proxyUrl: string;
  /** How many upcoming POSTs the proxy forwards, then cuts the connection of. */
  let dropNext = 0;

  before(async () => {
    server = await startServer();
    const target = new URL(server.url);
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const drop = req.method === "POST" && dropNext > 0;
        if (drop) dropNext -= 1;
        const upstream = httpRequest({ host: target.hostname, port: target.port, path: req.url,
          method: req.method, headers: req.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => body.push(chunk));
          answer.on("end", () => {
            if (drop) {
              req.socket.destroy();  // the write landed; its answer is lost
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(body));
          });
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
    const port = await freePort();
    await new Promise<void>((done) => proxy.listen(port, "127.0.0.1", done));
    proxyUrl = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    proxy?.closeAllConnections();
    await new Promise((done) => proxy?.close(done));
    await server?.stop();
  });

  test("a memory with its memory_id: the retry returns the stored record", async () => {
    const client = new Recallwell({ baseUrl: proxyUrl, apiKey: server.keys.alice, retryDelayMs: 1 });
    dropNext = 1;
    const memory = await client.addMemory({ content: "Alice is allergic to peanuts.",
      user_id: "alice", memory_type: "fact", memory_id: "alice-peanuts" });
    assert.equal(memory.id, "alice-peanuts");
    assert.equal(dropNext, 0);
    assert.equal((await client.listMemories({ user_id: "alice" })).total, 1);
    // Not a retry: the id is taken, and that is an error.
    await assert.rejects(client.addMemory({ content: "Alice is allergic to peanuts.",
      user_id: "alice", memory_id: "alice-peanuts" }), BadRequestError);
  });

  test("a thread with its thread_id, messages with their ids, a user profile", async () => {
    const client = new Recallwell({ baseUrl: proxyUrl, apiKey: server.keys.alice, retryDelayMs: 1 });
    dropNext = 1;
    const thread = await client.createThread({ user_id: "alice", thread_id: "t-lost" });
    assert.equal(thread.id, "t-lost");
    dropNext = 1;
    const ids = await client.addMessages("t-lost", { messages: [
      { role: "user", content: "hello", id: "msg-1" }, { role: "assistant", content: "hi",
        id: "msg-2" }] });
    assert.deepEqual(ids, { ids: ["msg-1", "msg-2"] });
    assert.equal((await client.listMessages("t-lost")).total, 2);
    dropNext = 1;
    const user = await client.addUser({ id: "alice", information: "Alice." });
    assert.equal(user.content, "Alice.");
    await assert.rejects(client.createThread({ user_id: "alice", thread_id: "t-lost" }),
      ConflictError);
  });

  test("a write without an id of the caller's is not retried: the error says so", async () => {
    const client = new Recallwell({ baseUrl: proxyUrl, apiKey: server.keys.alice, retryDelayMs: 1 });
    dropNext = 1;
    await assert.rejects(client.addMemory({ content: "Alice likes tea.", user_id: "alice" }),
      APIConnectionError);
    // It landed once, and only once.
    const page = await client.listMemories({ user_id: "alice" });
    assert.equal(page.items.filter((r) => r.content === "Alice likes tea.").length, 1);
  });
});
