/**
 * Errors the client throws. Every one is a {@link RecallwellError}; an answer of the server
 * with an error status is an {@link APIError} (a subclass per status), carrying the server's
 * error body `{"error": {"status", "code", "message"}}` as it came.
 */

import type { components } from "./schema.js";

/** The body of every error response of the server. */
export type ErrorResponse = components["schemas"]["ErrorResponse"];

/** The base class of every error this client throws. */
export class RecallwellError extends Error {
  /** The HTTP status, when the server answered; undefined for connection errors and timeouts. */
  readonly status: number | undefined;
  /** The server's error body (parsed JSON, or the raw text when it was not JSON). */
  readonly body: unknown;

  constructor(message: string, options: { status?: number; body?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.body = options.body;
  }
}

/** The server answered with an error status (4xx or 5xx). */
export class APIError extends RecallwellError {
  declare readonly status: number;
  /** The server's error code (`not_found`, `forbidden`, ...), or `"error"` when it sent none. */
  readonly code: string;
  /** The request's method and path (`GET /v1/memories/m1`), without the query or the key. */
  readonly request: string;
  /** The response headers (`retry-after`, ...). */
  readonly headers: Headers | undefined;

  constructor(
    status: number,
    body: unknown,
    request: string,
    headers?: Headers,
  ) {
    const error = isErrorResponse(body) ? body.error : undefined;
    const detail = error?.message ?? (typeof body === "string" && body ? body : "no error body");
    super(`${request}: ${status} ${detail}`, { status, body });
    this.code = error?.code ?? "error";
    this.request = request;
    this.headers = headers;
  }

  /** The server's message (`"no memory with id 'm1'"`), without the request and status. */
  get serverMessage(): string | undefined {
    return isErrorResponse(this.body) ? this.body.error.message : undefined;
  }
}

/** 400: bad input, a body that is not JSON, or a record id that already exists. */
export class BadRequestError extends APIError {}
/** 401: a missing, malformed, unknown or revoked API key. */
export class AuthenticationError extends APIError {}
/** 403: the key may not touch this user (or the operation needs an admin key). */
export class PermissionDeniedError extends APIError {}
/** 404: no such record, or one of a user the key may not touch (the same answer). */
export class NotFoundError extends APIError {}
/** 409: a thread that exists, or a thread id another user owns. */
export class ConflictError extends APIError {}
/** 413: the request body is larger than the server accepts. */
export class PayloadTooLargeError extends APIError {}
/** 415: an upload that is not the image it claims to be. */
export class UnsupportedMediaTypeError extends APIError {}
/** 422: a body or parameter outside the schema (the message names it). */
export class ValidationError extends APIError {}
/** 429: too many requests (retried for idempotent calls). */
export class RateLimitError extends APIError {}
/** 5xx: the server failed, or is not ready (503, retried for idempotent calls). */
export class ServerError extends APIError {}

/** No answer: the connection failed or was cut (after the retries an idempotent call gets). */
export class APIConnectionError extends RecallwellError {}

/** No answer within the client's `timeoutMs` (after the retries an idempotent call gets). */
export class APITimeoutError extends APIConnectionError {}

const BY_STATUS: Record<number, typeof APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  422: ValidationError,
  429: RateLimitError,
};

/** The error for an answer with this status: the subclass for it, else APIError. */
export function errorFor(status: number, body: unknown, request: string, headers?: Headers): APIError {
  const Class = BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new Class(status, body, request, headers);
}

function isErrorResponse(body: unknown): body is ErrorResponse {
  if (typeof body !== "object" || body === null || !("error" in body)) return false;
  const error = (body as { error: unknown }).error;
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as { message?: unknown }).message === "string"
  );
}
