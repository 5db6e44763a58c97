/**
 * Every method of the client against a real `oam serve` (temporary SQLite store, free port),
 * and its error paths: 400, 401, 403, 404, 409, 415, 422, with the server's error body.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  Recallwell,
  RecallwellError,
  UnsupportedMediaTypeError,
  ValidationError,
  type RecordOut,
} from "recallwell";

import { PACKAGE_DIR, startServer, type TestServer } from "./server.js";

// A valid 1x1 PNG (tests/_images.py).
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082",
  "hex",
);

let server: TestServer;
let alice: Recallwell;
let bob: Recallwell;
let admin: Recallwell;

before(async () => {
  server = await startServer();
  alice = new Recallwell({ baseUrl: server.url, apiKey: server.keys.alice });
  bob = new Recallwell({ baseUrl: server.url, apiKey: server.keys.bob });
  admin = new Recallwell({ baseUrl: server.url, apiKey: server.keys.admin });
});

after(async () => {
  await server?.stop();
});

/** The error a promise rejects with, checked to be of `Class`. */
async function failure<E extends Error>(
  promise: Promise<unknown>,
  Class: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Class, `expected ${Class.name}, got ${String(error)}`);
    return error;
  }
  assert.fail(`expected ${Class.name}, but the call succeeded`);
}

describe("health", () => {
  test("health, ready and waitUntilReady need no key", async () => {
    const anonymous = new Recallwell({ baseUrl: server.url });
    assert.deepEqual(await anonymous.health(), { status: "ok" });
    assert.deepEqual(await anonymous.ready(), { status: "ready" });
    await anonymous.waitUntilReady(5_000);
  });

  test("the base URL may end with /v1 or a slash", async () => {
    for (const baseUrl of [`${server.url}/`, `${server.url}/v1`, `${server.url}/v1/`]) {
      const client = new Recallwell({ baseUrl, apiKey: server.keys.alice });
      assert.equal(client.baseUrl, server.url);
      assert.equal((await client.listUsers()).total >= 0, true);
    }
  });

  test("the server's document is the checked-in openapi.json the types come from", async () => {
    const served = await (await fetch(`${server.url}/openapi.json`)).json();
    const checkedIn = JSON.parse(readFileSync(join(PACKAGE_DIR, "openapi.json"), "utf8"));
    assert.deepEqual(served, checkedIn);
  });
});

describe("users and agents", () => {
  test("addUser, getUser, listUsers, deleteUser", async () => {
    const added = await alice.addUser({ id: "alice", information: "Alice, a pastry chef.",
      metadata: { plan: "pro" } });
    assert.equal(added.id, "alice");
    assert.equal(added.record_type, "user_profile");
    assert.equal(added.content, "Alice, a pastry chef.");
    assert.deepEqual(added.metadata, { plan: "pro" });
    assert.deepEqual(await alice.getUser("alice"), added);
    const page = await alice.listUsers({ limit: 10 });
    assert.deepEqual(page.items.map((r) => r.id), ["alice"]);
    assert.equal(page.total, 1);
    assert.equal(page.next_offset, null);

    await admin.addUser({ id: "carol", information: "Carol." });
    assert.deepEqual((await admin.listUsers()).items.map((r) => r.id).sort(), ["alice", "carol"]);
    assert.deepEqual(await admin.deleteUser("carol", { cascade: true }), { deleted: 1 });
    await failure(admin.getUser("carol"), NotFoundError);
  });

  test("a user outside the key's list is 403, with the server's error body", async () => {
    const error = await failure(alice.addUser({ id: "bob", information: "Bob." }),
      PermissionDeniedError);
    assert.equal(error.status, 403);
    assert.equal(error.code, "forbidden");
    assert.deepEqual(error.body, {
      error: { status: 403, code: "forbidden", message: "this API key may not access user 'bob'" },
    });
    assert.equal(error.serverMessage, "this API key may not access user 'bob'");
    assert.equal(error.request, "POST /v1/users");
    assert.ok(error instanceof APIError && error instanceof RecallwellError);
    assert.match(error.message, /^POST \/v1\/users: 403 this API key may not access user 'bob'$/);
    await failure(alice.getUser("bob"), PermissionDeniedError);
    await failure(alice.deleteUser("bob"), PermissionDeniedError);
  });

  test("a profile that exists is 400", async () => {
    const error = await failure(alice.addUser({ id: "alice", information: "again" }),
      BadRequestError);
    assert.match(error.serverMessage ?? "", /already exists/);
  });

  test("addAgent, listAgents, deleteAgent (admin key)", async () => {
    const agent = await admin.addAgent({ id: "helper", information: "A support agent." });
    assert.equal(agent.record_type, "agent_profile");
    assert.ok((await admin.listAgents()).items.some((r) => r.id === "helper"));
    await failure(alice.addAgent({ id: "rogue", information: "x" }), PermissionDeniedError);
    await failure(alice.deleteAgent("helper"), PermissionDeniedError);
    await admin.addAgent({ id: "temp-agent", information: "Short-lived." });
    assert.deepEqual(await admin.deleteAgent("temp-agent", { cascade: false }), { deleted: 1 });
  });
});

describe("threads and messages", () => {
  test("createThread, getThread, listThreads, updateThread, deleteThread", async () => {
    const thread = await alice.createThread({ user_id: "alice", thread_id: "t/1",
      agent_id: "helper", metadata: { topic: "cakes" } });
    assert.equal(thread.id, "t/1");  // an id with a slash travels as %2F
    assert.equal(thread.agent_id, "helper");
    assert.deepEqual(await alice.getThread("t/1"), thread);
    const anonymous = await alice.createThread({ user_id: "alice" });
    assert.equal(anonymous.agent_id, null);
    const listed = await alice.listThreads({ user_id: "alice", agent_id: "helper" });
    assert.deepEqual(listed.items.map((r) => r.id), ["t/1"]);
    const all = await alice.listThreads({ user_id: "alice", limit: 1 });
    assert.equal(all.total, 2);
    assert.equal(all.next_offset, 1);
    const patched = await alice.updateThread("t/1", { metadata: { topic: "bread" } });
    assert.deepEqual(patched.metadata, { topic: "bread" });
    assert.deepEqual(await alice.deleteThread(anonymous.id), { deleted: 1 });
    await failure(alice.getThread(anonymous.id), NotFoundError);
  });

  test("a thread that exists is 409; another user's thread is 404", async () => {
    const error = await failure(alice.createThread({ user_id: "alice", thread_id: "t/1" }),
      ConflictError);
    assert.equal(error.status, 409);
    assert.equal(error.code, "conflict");
    assert.match(error.serverMessage ?? "", /already exists/);
    await failure(bob.getThread("t/1"), NotFoundError);
    await failure(bob.listMessages("t/1"), NotFoundError);
    await failure(bob.createThread({ user_id: "alice" }), PermissionDeniedError);
  });

  test("addMessages, listMessages, deleteMessage", async () => {
    const ids = await alice.addMessages("t/1", {
      messages: [
        { role: "user", content: "I need a gluten-free cake for Saturday.", id: "m-1" },
        { role: "assistant", content: "Noted: gluten-free, Saturday." },
      ],
    });
    assert.equal(ids.ids.length, 2);
    assert.equal(ids.ids[0], "m-1");
    const page = await alice.listMessages("t/1");
    assert.deepEqual(page.items.map((m) => [m.role, m.seq_no]), [["user", 1], ["assistant", 2]]);
    const extra = await alice.addMessages("t/1", { messages: [{ role: "user", content: "Bye" }],
      ttl_days: 1 });
    assert.ok((await alice.listMessages("t/1", { offset: 2 })).items[0]?.expires_at);
    assert.deepEqual(await alice.deleteMessage("t/1", extra.ids[0] as string), { deleted: 1 });
    assert.equal((await alice.listMessages("t/1")).total, 2);
  });

  test("getContextCard and getSummary", async () => {
    const card = await alice.getContextCard("t/1", { max_relevant_results: 5,
      max_recent_messages: 5 });
    assert.match(card.content, /<context_card>/);
    assert.match(card.content, /gluten-free/);
    const summary = await alice.getSummary("t/1", { token_budget: 200 });
    assert.equal(typeof summary.content, "string");
    assert.match(summary.content, /gluten-free/);
  });
});

describe("memories and links", () => {
  let peanuts: RecordOut;
  let windows: RecordOut;

  test("addMemory of every type, getMemory, listMemories", async () => {
    peanuts = await alice.addMemory({ content: "Alice is allergic to peanuts.", user_id: "alice",
      memory_type: "fact", memory_id: "alice-peanuts", metadata: { tags: ["health"] } });
    assert.equal(peanuts.id, "alice-peanuts");
    assert.equal(peanuts.record_type, "fact");
    windows = await alice.addMemory({ content: "Alice likes window seats.", user_id: "alice",
      memory_type: "preference", ttl_days: 30 });
    assert.ok(windows.expires_at);
    await alice.addMemory({ content: "Answer Alice in French.", user_id: "alice",
      memory_type: "guideline", agent_id: "helper" });
    await alice.addMemory({ content: "Alice asked about sourdough.", user_id: "alice",
      thread_id: "t/1" });
    await bob.addMemory({ content: "Bob is allergic to cats.", user_id: "bob",
      memory_type: "fact", memory_id: "bob-cats" });
    assert.deepEqual(await alice.getMemory("alice-peanuts"), peanuts);
    const listed = await alice.listMemories({ user_id: "alice" });
    assert.deepEqual(listed.items.map((r) => r.record_type).sort(),
      ["fact", "guideline", "memory", "preference"]);
    const inThread = await alice.listMemories({ user_id: "alice", thread_id: "t/1" });
    assert.deepEqual(inThread.items.map((r) => r.content), ["Alice asked about sourdough."]);
    assert.equal(inThread.items[0]?.agent_id, "helper");  // the thread's scope
    const ofAgent = await alice.listMemories({ user_id: "alice", agent_id: "helper" });
    assert.ok(ofAgent.items.some((r) => r.content === "Answer Alice in French."));
  });

  test("paginate walks every page", async () => {
    const seen: string[] = [];
    for await (const record of alice.paginate((page) =>
      alice.listMemories({ user_id: "alice", ...page }), 1)) {
      seen.push(record.id);
    }
    assert.equal(seen.length, 4);
    assert.equal(new Set(seen).size, 4);
  });

  test("updateMemory changes content, metadata, status and TTL", async () => {
    const updated = await alice.updateMemory("alice-peanuts", {
      content: "Alice is allergic to peanuts and almonds.", metadata: { tags: ["health", "food"] },
    });
    assert.equal(updated.content, "Alice is allergic to peanuts and almonds.");
    assert.deepEqual(updated.metadata, { tags: ["health", "food"] });
    const invalid = await alice.updateMemory(windows.id, { status: "invalid", ttl_days: 2 });
    assert.equal(invalid.status, "invalid");
    assert.ok(invalid.expires_at && invalid.expires_at !== windows.expires_at);
    await alice.updateMemory(windows.id, { status: "valid" });
  });

  test("another user's memory is 404, exactly as one that does not exist", async () => {
    const theirs = await failure(alice.getMemory("bob-cats"), NotFoundError);
    const none = await failure(alice.getMemory("no-such-memory"), NotFoundError);
    assert.equal(theirs.code, "not_found");
    assert.deepEqual(theirs.body, { error: { status: 404, code: "not_found",
      message: "no memory with id 'bob-cats'" } });
    assert.equal(none.status, 404);
    await failure(alice.updateMemory("bob-cats", { content: "x" }), NotFoundError);
    await failure(alice.deleteMemory("bob-cats"), NotFoundError);
    await failure(alice.listMemories({ user_id: "bob" }), PermissionDeniedError);
  });

  test("addLink, listLinks, deleteLink", async () => {
    const link = await alice.addLink({ source_record_id: "alice-peanuts",
      source_record_type: "fact", target_record_id: windows.id,
      target_record_type: "preference", relation_type: "related_to",
      metadata: { why: "test" } });
    assert.equal(link.relation_type, "related_to");
    assert.equal(link.source_record_id, "alice-peanuts");
    const links = await alice.listLinks(windows.id);
    assert.deepEqual(links.map((l) => l.id), [link.id]);
    const hops = await alice.search({ query: "peanut allergy", user_id: "alice", num_hops: 1,
      record_types: ["fact"], max_results: 1 });
    assert.equal(hops.results[0]?.record.id, "alice-peanuts");
    assert.deepEqual(hops.results[0]?.linked.map((l) => l.record.id), [windows.id]);
    await failure(bob.deleteLink(link.id), NotFoundError);
    assert.deepEqual(await alice.deleteLink(link.id), { deleted: 1 });
    assert.deepEqual(await alice.listLinks(windows.id), []);
  });

  test("getMemoryHistory", async () => {
    const memory = await alice.addMemory({ content: "Drinks tea.", user_id: "alice" });
    await alice.updateMemory(memory.id, { content: "Drinks green tea." });
    const versions = await alice.getMemoryHistory(memory.id);
    assert.deepEqual(versions.map((v) => [v.version, v.change, v.content, v.actor]), [
      [1, "created", "Drinks tea.", "user:alice"],
      [2, "updated", "Drinks green tea.", "user:alice"],
    ]);
    assert.deepEqual(versions[1]?.changed, ["content"]);
    await failure(bob.getMemoryHistory(memory.id), NotFoundError);
    await alice.deleteMemory(memory.id);
    const after = await alice.getMemoryHistory(memory.id);
    assert.deepEqual(after.map((v) => [v.change, v.content]), [
      ["created", null], ["updated", null], ["deleted", null],
    ]);
  });

  test("search as_of", async () => {
    const tag = { metadata: { case: "as_of" } };
    const paris = await alice.addMemory({ content: "Alice's office is in Paris.", user_id: "alice",
      timestamp: "2024-01-01T00:00:00Z", ...tag });
    const lisbon = await alice.addMemory({ content: "Alice's office is in Lisbon.",
      user_id: "alice", timestamp: "2025-06-01T00:00:00Z", ...tag });
    await alice.addLink({ source_record_id: lisbon.id, source_record_type: "memory",
      target_record_id: paris.id, target_record_type: "memory", relation_type: "supersedes" });
    await alice.updateMemory(paris.id, { status: "invalid" });
    const body = { query: "office", user_id: "alice", metadata_filter: { case: "as_of" } };
    const now = await alice.search(body);
    assert.deepEqual(now.results.map((r) => r.record.id), [lisbon.id]);
    const then = await alice.search({ ...body, as_of: new Date("2024-06-01T00:00:00Z") });
    assert.deepEqual(then.results.map((r) => r.record.id), [paris.id]);
    assert.equal(then.results[0]?.record.valid_until, "2025-06-01T00:00:00");
    const text = await alice.search({ ...body, as_of: "2024-06-01T00:00:00Z" });
    assert.deepEqual(text.results.map((r) => r.record.id), [paris.id]);
    await alice.deleteMemory(paris.id);
    await alice.deleteMemory(lisbon.id);
  });

  test("deleteMemory", async () => {
    const temp = await alice.addMemory({ content: "Temporary.", user_id: "alice" });
    assert.deepEqual(await alice.deleteMemory(temp.id), { deleted: 1 });
    await failure(alice.getMemory(temp.id), NotFoundError);
  });
});

describe("search", () => {
  for (const strategy of ["vector", "keyword", "hybrid"] as const) {
    test(`strategy ${strategy}`, async () => {
      const found = await alice.search({ query: "peanuts allergy", user_id: "alice", strategy,
        record_types: ["fact"], max_results: 3 });
      assert.equal(found.results[0]?.record.id, "alice-peanuts");
      assert.equal(typeof found.results[0]?.distance, "number");
      assert.ok(found.results.every((r) => r.record.user_id === "alice"));
    });
  }

  test("the server's default strategy (none given)", async () => {
    const found = await alice.search({ query: "window seat", user_id: "alice", max_results: 1 });
    assert.equal(found.results[0]?.record.content, "Alice likes window seats.");
  });

  test("scopes: agent and thread, exact or preferred", async () => {
    const exactThread = await alice.search({ query: "sourdough", user_id: "alice",
      thread_id: "t/1", exact_thread_match: true, record_types: ["memory"] });
    assert.deepEqual(exactThread.results.map((r) => r.record.content),
      ["Alice asked about sourdough."]);
    const exactAgent = await alice.search({ query: "French", user_id: "alice",
      agent_id: "helper", exact_agent_match: true, record_types: ["guideline", "memory"] });
    assert.ok(exactAgent.results.length >= 1);
    assert.ok(exactAgent.results.every((r) => r.record.agent_id === "helper"));
  });

  test("metadata filter, record types, token budget, invalid results", async () => {
    const filtered = await alice.search({ query: "food", user_id: "alice",
      metadata_filter: { tags: { $array_contains: "health" } } });
    assert.deepEqual(filtered.results.map((r) => r.record.id), ["alice-peanuts"]);
    const messages = await alice.search({ query: "gluten-free cake", user_id: "alice",
      record_types: ["message"], max_results: 1 });
    assert.equal(messages.results[0]?.record.record_type, "message");
    const budget = await alice.search({ query: "Alice", user_id: "alice", token_budget: 1 });
    assert.deepEqual(budget.results, []);
    const temp = await alice.addMemory({ content: "Alice owns a red kayak.", user_id: "alice",
      status: "invalid" });
    const hidden = await alice.search({ query: "red kayak", user_id: "alice",
      record_types: ["memory"] });
    assert.ok(!hidden.results.some((r) => r.record.id === temp.id));
    const shown = await alice.search({ query: "red kayak", user_id: "alice",
      record_types: ["memory"], include_invalid_results: true });
    assert.ok(shown.results.some((r) => r.record.id === temp.id));
    await alice.deleteMemory(temp.id);
  });

  test("searchThread, preferred or exact", async () => {
    for (const strategy of ["vector", "keyword", "hybrid"] as const) {
      const found = await alice.searchThread("t/1", { query: "gluten-free", strategy,
        record_types: ["message"], exact_thread_match: true, max_results: 2 });
      assert.ok(found.results.length >= 1, strategy);
      assert.ok(found.results.every((r) => r.record.thread_id === "t/1"), strategy);
    }
    const rye = await alice.addMemory({ content: "Alice bakes rye on Sundays.", user_id: "alice",
      thread_id: "t/1", metadata: { tags: ["bread"] } });
    const filtered = await alice.searchThread("t/1", { query: "baking",
      metadata_filter: { tags: { $array_contains: "bread" } } });
    assert.deepEqual(filtered.results.map((r) => r.record.id), [rye.id]);
    const memories = await alice.searchThread("t/1", { query: "sourdough",
      record_types: ["memory"], max_results: 1 });
    assert.equal(memories.results[0]?.record.content, "Alice asked about sourdough.");
    await alice.deleteMemory(rye.id);
  });

  test("another user is 403; a bad strategy or an empty query is 422", async () => {
    await failure(alice.search({ query: "cats", user_id: "bob" }), PermissionDeniedError);
    const error = await failure(
      alice.search({ query: "x", user_id: "alice", strategy: "fuzzy" as "vector" }),
      ValidationError);
    assert.equal(error.status, 422);
    assert.equal(error.code, "invalid_request");
    assert.match(error.serverMessage ?? "", /strategy/);
    await failure(alice.search({ query: "", user_id: "alice" }), ValidationError);
  });
});

describe("images", () => {
  test("addImage, getImage, listImages, getImageContent, deleteImage", async () => {
    const image = await alice.addImage({ file: PNG, user_id: "alice", mime_type: "image/png",
      description: "A birthday cake.", metadata: { source: "upload" }, filename: "cake.png" });
    assert.equal(image.record_type, "image");
    assert.equal(image.mime_type, "image/png");
    assert.deepEqual(image.metadata, { source: "upload" });
    const fromBlob = await alice.addImage({ file: new Blob([PNG], { type: "image/png" }),
      user_id: "alice", thread_id: "t/1" });
    assert.equal(fromBlob.thread_id, "t/1");
    const sniffed = await alice.addImage({ file: new Uint8Array(PNG), user_id: "alice" });
    assert.equal(sniffed.mime_type, "image/png");  // the server reads the type from the bytes
    assert.deepEqual(await alice.getImage(image.id), image);
    const listed = await alice.listImages({ user_id: "alice" });
    assert.equal(listed.total, 3);
    const content = await alice.getImageContent(image.id);
    assert.equal(content.contentType, "image/png");
    assert.deepEqual(Buffer.from(content.bytes), PNG);
    await failure(bob.getImage(image.id), NotFoundError);
    await failure(bob.getImageContent(image.id), NotFoundError);
    await failure(alice.listImages({ user_id: "bob" }), PermissionDeniedError);
    for (const record of [image, fromBlob, sniffed]) {
      assert.deepEqual(await alice.deleteImage(record.id), { deleted: 1 });
    }
  });

  test("bytes that are not an image are 415", async () => {
    const error = await failure(alice.addImage({ file: new TextEncoder().encode("not a png"),
      user_id: "alice", mime_type: "image/png" }), UnsupportedMediaTypeError);
    assert.equal(error.status, 415);
    assert.equal(error.code, "unsupported_media_type");
  });
});

describe("admin", () => {
  test("extractionStats and purge need an admin key", async () => {
    const stats = await admin.extractionStats();
    assert.equal(stats.extraction_enabled, false);
    assert.equal(typeof stats.completed, "number");
    assert.deepEqual(await admin.purge(), { deleted: 0 });
    assert.deepEqual(await admin.purge({ expired: false }), { deleted: 0 });
    await failure(alice.extractionStats(), PermissionDeniedError);
    await failure(alice.purge(), PermissionDeniedError);
  });
});

describe("authentication", () => {
  test("no key, an unknown key, a malformed key, a revoked key: 401", async () => {
    const keys = [undefined, "oam_0000000000000000_nope", "", server.keys.revoked];
    for (const apiKey of keys) {
      const client = new Recallwell({ baseUrl: server.url, ...(apiKey === undefined ? {} : { apiKey }) });
      const error = await failure(client.listUsers(), AuthenticationError);
      assert.equal(error.status, 401);
      assert.equal(error.code, "unauthorized");
      assert.equal(error.headers?.get("www-authenticate"), "Bearer");
      assert.match(error.serverMessage ?? "", /API key|Authorization/);
    }
    const revoked = new Recallwell({ baseUrl: server.url, apiKey: server.keys.revoked });
    const error = await failure(revoked.getMemory("alice-peanuts"), AuthenticationError);
    assert.equal(error.serverMessage, "invalid or revoked API key");
  });

  test("bad parameters are 422 naming them", async () => {
    const error = await failure(alice.listMemories({ user_id: "alice", limit: 0 }),
      ValidationError);
    assert.match(error.serverMessage ?? "", /limit/);
    await failure(alice.addMemory({ content: "", user_id: "alice" }), ValidationError);
    await failure(alice.addMessages("t/1", { messages: [] }), ValidationError);
    await failure(alice.getContextCard("t/1", { max_recent_messages: 999 }), ValidationError);
  });

  test("an empty id is refused before any request", async () => {
    await assert.rejects(alice.getMemory(""), TypeError);
  });
});
