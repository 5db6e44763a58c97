/**
 * The client: one method for each route of `oam serve`'s REST API, over `fetch`.
 *
 * Request and response bodies are the server's own (snake_case, typed from its OpenAPI
 * document in `schema.ts`); the methods are camelCase. A call that may be repeated without
 * effect (GET, DELETE, a search, a write that names its record's id) is retried on a lost
 * connection, a timeout, 429, 502, 503 and 504; any other call is sent once.
 */

import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  RecallwellError,
  errorFor,
} from "./errors.js";
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];
type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

/** Every field of a response is there: the server writes null, never leaves one out. */
type Out<T> = { [K in keyof T]-?: T[K] };

/** A stored record: message, memory, profile, thread or image. */
export type RecordOut = Out<Schemas["RecordOut"]>;
/** One page of a list: `items`, `total`, `offset`, `limit`, `next_offset`. */
export type Page = Omit<Out<Schemas["Page"]>, "items"> & { items: RecordOut[] };
export type Deleted = Schemas["Deleted"];
export type Ids = Schemas["Ids"];
/** Prompt-ready text (a context card, a summary). */
export type Text = Schemas["Text"];
export type LinkOut = Out<Schemas["LinkOut"]>;
/** One version of a memory: what it held after one change, when and by whom. */
export type VersionOut = Out<Schemas["VersionOut"]>;
/** A record reached through a link (`num_hops`), with the link. */
export type LinkedOut = { relation: LinkOut; record: RecordOut };
/** One search result: the record, its distance (lower is closer), its linked records. */
export type ResultOut = Omit<Out<Schemas["ResultOut"]>, "record" | "linked"> & {
  record: RecordOut;
  linked: LinkedOut[];
};
export type SearchOut = { results: ResultOut[] };
export type ProfileIn = Schemas["ProfileIn"];
export type ThreadIn = Schemas["ThreadIn"];
export type ThreadPatch = Schemas["ThreadPatch"];
export type MessageIn = Schemas["MessageIn"];
export type MessagesIn = Schemas["MessagesIn"];
export type MemoryIn = Schemas["MemoryIn"];
export type MemoryPatch = Schemas["MemoryPatch"];
export type LinkIn = Schemas["LinkIn"];
/** `as_of`: only what was true at that time (a `Date`, or ISO-8601 text; without an offset,
 * UTC), whatever its status now; omitted: what is true now. */
type AsOf = { as_of?: string | Date | null };
export type SearchIn = Omit<Schemas["SearchIn"], "as_of"> & AsOf;
export type ThreadSearchIn = Omit<Schemas["ThreadSearchIn"], "as_of"> & AsOf;
export type PurgeIn = Schemas["PurgeIn"];
export type ExtractionStats = Schemas["ExtractionStats"];
export type Health = Schemas["Health"];
export type Ready = Schemas["Ready"];
/** A search strategy: `vector`, `keyword` or `hybrid` (null: the server's). */
export type Strategy = NonNullable<SearchIn["strategy"]>;
/** A record type a search may ask for. */
export type SearchableType = NonNullable<SearchIn["record_types"]>[number];
export type MemoryType = NonNullable<MemoryIn["memory_type"]>;

/** A search body with its `as_of` as ISO-8601 text (a `Date` is sent in UTC). */
function withAsOf<T extends AsOf>(body: T): T {
  return body.as_of instanceof Date ? { ...body, as_of: body.as_of.toISOString() } : body;
}

// The response types above are the generated ones with every field present: each must still be
// one of the generated type's values, or this does not compile (the schema changed under it).
type Fits<Narrow extends Wide, Wide> = Narrow;
type ResponsesFit = [
  Fits<RecordOut, Schemas["RecordOut"]>,
  Fits<Page, Schemas["Page"]>,
  Fits<LinkOut, Schemas["LinkOut"]>,
  Fits<VersionOut, Schemas["VersionOut"]>,
  Fits<LinkedOut, Schemas["LinkedOut"]>,
  Fits<ResultOut, Schemas["ResultOut"]>,
  Fits<SearchOut, Schemas["SearchOut"]>,
];

export type PageQuery = QueryOf<"list_users_v1_users_get">;
export type ListThreadsQuery = QueryOf<"list_threads_v1_threads_get">;
export type ListMemoriesQuery = QueryOf<"list_memories_v1_memories_get">;
export type ListImagesQuery = QueryOf<"list_images_v1_images_get">;
export type ContextCardQuery = QueryOf<"context_card_v1_threads__thread_id__context_card_get">;
export type SummaryQuery = QueryOf<"summary_v1_threads__thread_id__summary_get">;
export type DeleteQuery = QueryOf<"delete_user_v1_users__user_id__delete">;

/** An image upload: the bytes and the form fields of `POST /v1/images`. */
export interface ImageIn {
  /** PNG, JPEG or WEBP bytes. */
  file: Blob | ArrayBuffer | Uint8Array;
  user_id: string;
  description?: string;
  thread_id?: string;
  agent_id?: string;
  metadata?: Record<string, unknown>;
  /** The file name sent with the part (default `image`). */
  filename?: string;
  /** The part's content type; the server checks it against the bytes (default: the Blob's
   * own type, else `application/octet-stream`, which lets the server read it from them). */
  mime_type?: string;
}

/** An image's bytes, as `GET /v1/images/{id}/content` answers. */
export interface ImageContent {
  bytes: Uint8Array;
  /** `image/png`, ..., or `application/octet-stream` for bytes stored unchecked. */
  contentType: string;
}

export interface ClientOptions {
  /** The server's address, e.g. `http://127.0.0.1:8080` (a trailing `/v1` is accepted). */
  baseUrl: string;
  /** An API key from `oam keys create`, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** Milliseconds one attempt may take before it is abandoned (default 30,000; 0: none). */
  timeoutMs?: number;
  /** Further attempts an idempotent call gets (default 2; 0: none). */
  maxRetries?: number;
  /** The first retry's delay in milliseconds, doubled on each later one, with jitter, up to
   * 8 s; a `Retry-After` header of the answer takes precedence (default 250). */
  retryDelayMs?: number;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** Per-call options. */
export interface RequestOptions {
  /** Abort the call (no retry follows an abort). */
  signal?: AbortSignal;
  /** This call's timeout per attempt, in milliseconds (default: the client's). */
  timeoutMs?: number;
  /** This call's further attempts (default: the client's; only idempotent calls retry). */
  maxRetries?: number;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";
type QueryValue = string | number | boolean | null | undefined;

interface Call<T> {
  method: Method;
  path: string;
  query?: Record<string, QueryValue> | undefined;
  json?: unknown;
  form?: FormData;
  /** Whether repeating the call has no further effect: retried when true. */
  idempotent: boolean;
  /** What a retried write answers when its first attempt landed ("already exists"): the
   * record as stored, or undefined to throw the error. */
  recover?: (error: APIError) => Promise<T | undefined>;
  /** Answer the body's bytes and content type (ImageContent), not JSON. */
  raw?: boolean;
  options?: RequestOptions | undefined;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const MAX_DELAY_MS = 8_000;

/** A client of one `oam serve` server, with one API key. */
export class Recallwell {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly headers: Record<string, string>;

  constructor(options: ClientOptions) {
    if (!options || typeof options.baseUrl !== "string" || !options.baseUrl) {
      throw new TypeError("Recallwell: baseUrl is required, e.g. http://127.0.0.1:8080");
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 250;
    const impl = options.fetch ?? globalThis.fetch;
    if (typeof impl !== "function") {
      throw new TypeError("Recallwell: no fetch here (Node 18+ has one; or pass options.fetch)");
    }
    this.fetchImpl = impl;
    this.headers = { ...options.headers };
  }

  // -------------------------------------------------------------------- health

  /** `GET /healthz`: liveness, `{status: "ok"}` (no key needed). */
  async health(options?: RequestOptions): Promise<Health> {
    return this.request({ method: "GET", path: "/healthz", idempotent: true, options });
  }

  /** `GET /readyz`: `{status: "ready"}` once the server can serve; a 503 (ServerError)
   * while it starts or stops. */
  async ready(options?: RequestOptions): Promise<Ready> {
    return this.request({ method: "GET", path: "/readyz", idempotent: true, options });
  }

  /** Wait until `/readyz` answers 200, polling every 200 ms, for up to `timeoutMs`
   * (default 60,000); throws the last error when the time is up. */
  async waitUntilReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await this.ready({ maxRetries: 0, timeoutMs: 2_000 });
        return;
      } catch (error) {
        if (!(error instanceof RecallwellError) || Date.now() > deadline) throw error;
      }
      await sleep(200);
    }
  }

  // -------------------------------------------------------------------- users, agents

  /** `GET /v1/users`: the user profiles this key may access. */
  async listUsers(query: PageQuery = {}, options?: RequestOptions): Promise<Page> {
    return this.request({ method: "GET", path: "/v1/users", query, idempotent: true, options });
  }

  /** `POST /v1/users`: add a user profile (retried: the id names it). */
  async addUser(body: ProfileIn, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "POST", path: "/v1/users", json: body, idempotent: true, options,
      recover: async () => {
        const found = await this.getUser(body.id, options).catch(() => undefined);
        return found && found.content === body.information ? found : undefined;
      },
    });
  }

  /** `GET /v1/users/{id}`: one user profile. */
  async getUser(userId: string, options?: RequestOptions): Promise<RecordOut> {
    return this.request({ method: "GET", path: `/v1/users/${id(userId)}`, idempotent: true, options });
  }

  /** `DELETE /v1/users/{id}`: delete a user and (with `cascade`, the default) all their
   * threads and memories. */
  async deleteUser(userId: string, query: DeleteQuery = {}, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/users/${id(userId)}`, query, idempotent: true, options,
    });
  }

  /** `GET /v1/agents`: agent profiles (a user key: the agents of its users' threads). */
  async listAgents(query: PageQuery = {}, options?: RequestOptions): Promise<Page> {
    return this.request({ method: "GET", path: "/v1/agents", query, idempotent: true, options });
  }

  /** `POST /v1/agents`: add an agent profile (admin key; retried: the id names it). */
  async addAgent(body: ProfileIn, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "POST", path: "/v1/agents", json: body, idempotent: true, options,
      recover: async () => {
        const page = await this.listAgents({ limit: 1000 }, options).catch(() => undefined);
        const found = page?.items.find((item) => item.id === body.id);
        return found && found.content === body.information ? found : undefined;
      },
    });
  }

  /** `DELETE /v1/agents/{id}` (admin key). */
  async deleteAgent(agentId: string, query: DeleteQuery = {}, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/agents/${id(agentId)}`, query, idempotent: true, options,
    });
  }

  // -------------------------------------------------------------------- threads, messages

  /** `POST /v1/threads`: create a thread for a user (retried only when it names its
   * `thread_id`). */
  async createThread(body: ThreadIn, options?: RequestOptions): Promise<RecordOut> {
    const chosen = body.thread_id ?? undefined;
    return this.request({
      method: "POST", path: "/v1/threads", json: body, idempotent: chosen !== undefined, options,
      recover: async () => {
        const found = await this.getThread(chosen as string, options).catch(() => undefined);
        return found && found.user_id === body.user_id ? found : undefined;
      },
    });
  }

  /** `GET /v1/threads?user_id=...`: a user's threads, oldest first. */
  async listThreads(query: ListThreadsQuery, options?: RequestOptions): Promise<Page> {
    return this.request({ method: "GET", path: "/v1/threads", query, idempotent: true, options });
  }

  /** `GET /v1/threads/{id}`: one thread. */
  async getThread(threadId: string, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "GET", path: `/v1/threads/${id(threadId)}`, idempotent: true, options,
    });
  }

  /** `PATCH /v1/threads/{id}`: replace the thread's metadata. */
  async updateThread(threadId: string, body: ThreadPatch, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "PATCH", path: `/v1/threads/${id(threadId)}`, json: body, idempotent: false, options,
    });
  }

  /** `DELETE /v1/threads/{id}`: the thread with its messages and thread memories. */
  async deleteThread(threadId: string, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/threads/${id(threadId)}`, idempotent: true, options,
    });
  }

  /** `POST /v1/threads/{id}/messages`: append messages; returns their ids (retried only
   * when every message names its `id`). */
  async addMessages(threadId: string, body: MessagesIn, options?: RequestOptions): Promise<Ids> {
    const named = body.messages.every((m) => m.id != null);
    return this.request({
      method: "POST", path: `/v1/threads/${id(threadId)}/messages`, json: body,
      idempotent: named, options,
      // One request is one transaction: "already exists" on a retry means all of them landed.
      recover: async (error) =>
        error.status === 400 && /already exists/.test(error.serverMessage ?? "")
          ? { ids: body.messages.map((m) => m.id as string) }
          : undefined,
    });
  }

  /** `GET /v1/threads/{id}/messages`: the thread's messages in order. */
  async listMessages(threadId: string, query: PageQuery = {}, options?: RequestOptions): Promise<Page> {
    return this.request({
      method: "GET", path: `/v1/threads/${id(threadId)}/messages`, query, idempotent: true,
      options,
    });
  }

  /** `DELETE /v1/threads/{id}/messages/{message_id}`: one message. */
  async deleteMessage(threadId: string, messageId: string, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/threads/${id(threadId)}/messages/${id(messageId)}`,
      idempotent: true, options,
    });
  }

  /** `GET /v1/threads/{id}/context-card`: what is known about the thread's user and
   * conversation, as prompt-ready text (`content`). */
  async getContextCard(threadId: string, query: ContextCardQuery = {}, options?: RequestOptions
  ): Promise<Text> {
    return this.request({
      method: "GET", path: `/v1/threads/${id(threadId)}/context-card`, query, idempotent: true,
      options,
    });
  }

  /** `GET /v1/threads/{id}/summary`: the thread's summary (`content`). */
  async getSummary(threadId: string, query: SummaryQuery = {}, options?: RequestOptions): Promise<Text> {
    return this.request({
      method: "GET", path: `/v1/threads/${id(threadId)}/summary`, query, idempotent: true,
      options,
    });
  }

  /** `POST /v1/threads/{id}/search`: search from a thread (its user and agent; this thread
   * preferred, or only this thread with `exact_thread_match`; `as_of` as in {@link search}). */
  async searchThread(threadId: string, body: ThreadSearchIn, options?: RequestOptions): Promise<SearchOut> {
    return this.request({
      method: "POST", path: `/v1/threads/${id(threadId)}/search`, json: withAsOf(body),
      idempotent: true,
      options,
    });
  }

  // -------------------------------------------------------------------- memories, links

  /** `POST /v1/memories`: add a memory (retried only when it names its `memory_id`). */
  async addMemory(body: MemoryIn, options?: RequestOptions): Promise<RecordOut> {
    const chosen = body.memory_id ?? undefined;
    return this.request({
      method: "POST", path: "/v1/memories", json: body, idempotent: chosen !== undefined, options,
      recover: async () => {
        const found = await this.getMemory(chosen as string, options).catch(() => undefined);
        return found && found.content === body.content && found.user_id === body.user_id
          ? found
          : undefined;
      },
    });
  }

  /** `GET /v1/memories?user_id=...`: a user's memories, oldest first. */
  async listMemories(query: ListMemoriesQuery, options?: RequestOptions): Promise<Page> {
    return this.request({ method: "GET", path: "/v1/memories", query, idempotent: true, options });
  }

  /** `GET /v1/memories/{id}`: one memory. */
  async getMemory(memoryId: string, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "GET", path: `/v1/memories/${id(memoryId)}`, idempotent: true, options,
    });
  }

  /**
   * `GET /v1/memories/{id}/history`: a memory's versions, oldest first (created, updated,
   * status, superseded, deleted). A deleted memory's owner still reads its tombstone.
   */
  async getMemoryHistory(memoryId: string, options?: RequestOptions): Promise<VersionOut[]> {
    return this.request({
      method: "GET", path: `/v1/memories/${id(memoryId)}/history`, idempotent: true, options,
    });
  }

  /** `PATCH /v1/memories/{id}`: change content, metadata, status or TTL. */
  async updateMemory(memoryId: string, body: MemoryPatch, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "PATCH", path: `/v1/memories/${id(memoryId)}`, json: body, idempotent: false,
      options,
    });
  }

  /** `DELETE /v1/memories/{id}`. */
  async deleteMemory(memoryId: string, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/memories/${id(memoryId)}`, idempotent: true, options,
    });
  }

  /** `POST /v1/links`: link two memories (sent once: a link has no id of the caller's). */
  async addLink(body: LinkIn, options?: RequestOptions): Promise<LinkOut> {
    return this.request({ method: "POST", path: "/v1/links", json: body, idempotent: false, options });
  }

  /** `GET /v1/memories/{id}/links`: the links from and to a memory. */
  async listLinks(memoryId: string, options?: RequestOptions): Promise<LinkOut[]> {
    return this.request({
      method: "GET", path: `/v1/memories/${id(memoryId)}/links`, idempotent: true, options,
    });
  }

  /** `DELETE /v1/links/{id}`. */
  async deleteLink(relationId: string, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/links/${id(relationId)}`, idempotent: true, options,
    });
  }

  // -------------------------------------------------------------------- images

  /** `POST /v1/images` (multipart): upload a PNG, JPEG or WEBP image (sent once). */
  async addImage(image: ImageIn, options?: RequestOptions): Promise<RecordOut> {
    const form = new FormData();
    const type = image.mime_type || (image.file instanceof Blob && image.file.type) ||
      "application/octet-stream";
    const typed = new Blob([image.file as BlobPart], { type });
    form.append("file", typed, image.filename ?? "image");
    form.append("user_id", image.user_id);
    for (const name of ["description", "thread_id", "agent_id"] as const) {
      const value = image[name];
      if (value !== undefined) form.append(name, value);
    }
    if (image.metadata !== undefined) form.append("metadata", JSON.stringify(image.metadata));
    return this.request({ method: "POST", path: "/v1/images", form, idempotent: false, options });
  }

  /** `GET /v1/images?user_id=...`: a user's images (records, without bytes). */
  async listImages(query: ListImagesQuery, options?: RequestOptions): Promise<Page> {
    return this.request({ method: "GET", path: "/v1/images", query, idempotent: true, options });
  }

  /** `GET /v1/images/{id}`: one image's record. */
  async getImage(imageId: string, options?: RequestOptions): Promise<RecordOut> {
    return this.request({
      method: "GET", path: `/v1/images/${id(imageId)}`, idempotent: true, options,
    });
  }

  /** `GET /v1/images/{id}/content`: the image's bytes and content type. */
  async getImageContent(imageId: string, options?: RequestOptions): Promise<ImageContent> {
    return this.request<ImageContent>({
      method: "GET", path: `/v1/images/${id(imageId)}/content`, idempotent: true, raw: true,
      options,
    });
  }

  /** `DELETE /v1/images/{id}`. */
  async deleteImage(imageId: string, options?: RequestOptions): Promise<Deleted> {
    return this.request({
      method: "DELETE", path: `/v1/images/${id(imageId)}`, idempotent: true, options,
    });
  }

  // -------------------------------------------------------------------- search, admin

  /** `POST /v1/search`: search one user's memory (the user is always matched exactly), with
   * scopes (`agent_id`, `thread_id`, `exact_*_match`), `record_types`, `metadata_filter`,
   * link hops, a token budget, a `strategy` (`vector`, `keyword`, `hybrid`) and `as_of` (what
   * was true then: superseded and invalidated memories that were still true count). */
  async search(body: SearchIn, options?: RequestOptions): Promise<SearchOut> {
    return this.request({
      method: "POST", path: "/v1/search", json: withAsOf(body), idempotent: true, options,
    });
  }

  /** `GET /v1/extraction`: this server process's memory extraction counts (admin key). */
  async extractionStats(options?: RequestOptions): Promise<ExtractionStats> {
    return this.request({ method: "GET", path: "/v1/extraction", idempotent: true, options });
  }

  /** `POST /v1/purge`: remove expired records now (admin key); returns how many. */
  async purge(body: PurgeIn = {}, options?: RequestOptions): Promise<Deleted> {
    return this.request({ method: "POST", path: "/v1/purge", json: body, idempotent: false, options });
  }

  /** Every item of a paged list, page after page: `client.paginate((page) =>
   * client.listMemories({ user_id: "alice", ...page }))`. */
  async *paginate(
    list: (page: { limit: number; offset: number }) => Promise<Page>,
    limit = 100,
  ): AsyncGenerator<RecordOut, void, undefined> {
    let offset: number | null = 0;
    while (offset !== null) {
      const page: Page = await list({ limit, offset });
      yield* page.items;
      offset = page.next_offset ?? null;
    }
  }

  // -------------------------------------------------------------------- transport

  private async request<T>(call: Call<T>): Promise<T> {
    const options = call.options ?? {};
    const retries = call.idempotent ? Math.max(0, options.maxRetries ?? this.maxRetries) : 0;
    let retried = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt<T>(call);
      } catch (error) {
        if (retried && call.recover && error instanceof APIError &&
            (error.status === 400 || error.status === 409)) {
          const found = await call.recover(error);  // the earlier attempt landed
          if (found !== undefined) return found;
        }
        if (attempt >= retries || !retryable(error) || options.signal?.aborted) throw error;
        await sleep(this.delay(attempt, error), options.signal);
        retried = true;
      }
    }
  }

  private async attempt<T>(call: Call<T>): Promise<T> {
    const options = call.options ?? {};
    const url = new URL(this.baseUrl + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      accept: call.raw ? "*/*" : "application/json", ...this.headers,
    };
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    let body: string | FormData | undefined;
    if (call.form !== undefined) {
      body = call.form;
    } else if (call.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.json);
    }
    if (options.signal?.aborted) throw options.signal.reason;
    const described = `${call.method} ${call.path}`;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer = timeoutMs > 0
      ? setTimeout(() => { timedOut = true; controller.abort(); }, timeoutMs)
      : undefined;
    const onAbort = (): void => controller.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method: call.method, headers, body, signal: controller.signal,
        });
      } catch (error) {
        if (timedOut) {
          throw new APITimeoutError(`${described}: no answer in ${timeoutMs} ms`, { cause: error });
        }
        if (options.signal?.aborted) throw options.signal.reason;
        throw new APIConnectionError(`${described}: ${describe(error)}`, { cause: error });
      }
      if (!response.ok) {
        const text = await response.text().catch(() => "");
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON: the raw text is the body
        }
        throw errorFor(response.status, parsed, described, response.headers);
      }
      if (call.raw) {
        const content: ImageContent = {
          bytes: new Uint8Array(await response.arrayBuffer()),
          contentType: response.headers.get("content-type") ?? "application/octet-stream",
        };
        return content as T;
      }
      const text = await response.text();
      return (text ? JSON.parse(text) : undefined) as T;
    } catch (error) {
      if (timedOut && !(error instanceof RecallwellError)) {
        throw new APITimeoutError(`${described}: no answer in ${timeoutMs} ms`, { cause: error });
      }
      throw error;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  private delay(attempt: number, error: unknown): number {
    if (error instanceof APIError) {
      const after = Number(error.headers?.get("retry-after"));
      if (Number.isFinite(after) && after >= 0) return Math.min(after * 1000, MAX_DELAY_MS);
    }
    const base = Math.min(this.retryDelayMs * 2 ** attempt, MAX_DELAY_MS);
    return base / 2 + Math.random() * (base / 2);
  }
}

function retryable(error: unknown): boolean {
  if (error instanceof APIError) return RETRY_STATUSES.has(error.status);
  return error instanceof APIConnectionError;  // timeouts included
}

/** One path segment: any id, `/` included (the server decodes `%2F` inside a segment). */
function id(value: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`an id must be a non-empty string, not ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
