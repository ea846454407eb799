import { promisify } from "node:util";
import nock from "nock";
import { afterEach, beforeEach, expect } from "vitest";
import { checkRequest, checkResponse, parseBody, type ApiRequest } from "./openapi.js";
import { API, rest } from "./rest-shapes.js";

export { API, rest };
const nockViolations: string[] = [];
const CHECKED = Symbol("openapi-checked");
const LAST = Symbol("openapi-request");

type ReplyFn = (this: unknown, req: Request) => unknown;
interface NockInterceptor {
  statusCode: number | null;
  body: unknown;
  errorMessage?: unknown;
  replyFunction?: ReplyFn;
  fullReplyFunction?: ReplyFn;
  [CHECKED]?: boolean;
  /** The request being answered (nock emits "request" right before it calls a reply function). */
  [LAST]?: ApiRequest;
}

/** The request as openapi.ts takes it, from what nock hands a scope's "request" listeners. */
function apiRequest(req: Request, body: string | undefined): ApiRequest {
  const url = new URL(req.url);
  return {
    method: req.method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    body: parseBody(body),
  };
}

function checkReply(req: ApiRequest, status: number, body: unknown): void {
  const parsed = typeof body === "string" || Buffer.isBuffer(body) ? parseBody(String(body)) : body;
  nockViolations.push(...checkResponse(req, { status, body: status === 204 ? undefined : parsed }));
}

/**
 * Every request that reaches an interceptor on api.github.com, and the interceptor's answer,
 * is held against GitHub's OpenAPI description (openapi.ts): nock tells each scope about a
 * request before it plays the reply back, so a static reply is checked there and a reply
 * function is wrapped to check what it returns.
 */
function checkNockAgainstOpenapi(): void {
  const proto = Object.getPrototypeOf(nock(API)) as {
    emit: (event: string | symbol, ...args: unknown[]) => boolean;
    [CHECKED]?: boolean;
  };
  if (proto[CHECKED]) return;
  proto[CHECKED] = true;
  const emit = proto.emit;
  proto.emit = function (this: unknown, event: string | symbol, ...args: unknown[]) {
    if (event === "request") {
      const [req, interceptor, body] = args as [Request, NockInterceptor, string | undefined];
      if (new URL(req.url).origin === API) checkIntercepted(req, interceptor, body);
    }
    return emit.call(this, event, ...args);
  };
}

function checkIntercepted(req: Request, interceptor: NockInterceptor, body: string | undefined) {
  const api = apiRequest(req, body);
  nockViolations.push(...checkRequest(api));
  interceptor[LAST] = api;
  // replyWithError: no answer at all, so nothing to check but the request.
  if (interceptor.errorMessage !== undefined) return;
  if (interceptor.replyFunction) {
    if (interceptor[CHECKED]) return;
    interceptor[CHECKED] = true;
    const fn = interceptor.replyFunction;
    const call = fn.length === 2 ? (promisify(fn) as ReplyFn) : fn;
    interceptor.replyFunction = async function (this: unknown, r: Request) {
      const out = await call.call(this, r);
      checkReply(interceptor[LAST] ?? api, interceptor.statusCode ?? 200, out);
      return out;
    };
  } else if (interceptor.fullReplyFunction) {
    if (interceptor[CHECKED]) return;
    interceptor[CHECKED] = true;
    const fn = interceptor.fullReplyFunction;
    const call = fn.length === 2 ? (promisify(fn) as ReplyFn) : fn;
    interceptor.fullReplyFunction = async function (this: unknown, r: Request) {
      const out = (await call.call(this, r)) as [number, unknown?, unknown?];
      checkReply(interceptor[LAST] ?? api, out[0], out[1]);
      return out;
    };
  } else {
    checkReply(api, interceptor.statusCode ?? 200, interceptor.body);
  }
}

/** What the nock replies and the requests they answered broke so far, emptied. */
export function takeNockOpenapiViolations(): string[] {
  return nockViolations.splice(0);
}

/**
 * nock for every test of the file: no real network, and after each test, fail on a request no
 * interceptor matched and on an interceptor no request used.
 */
export function useNock(): void {
  const unmatched: string[] = [];
  const onNoMatch = (req: {
    method?: string;
    url?: string;
    href?: string;
    path?: string;
    options?: { method?: string; href?: string; path?: string };
  }) => {
    const method = req.method ?? req.options?.method ?? "?";
    const where = req.url ?? req.href ?? req.path ?? req.options?.href ?? req.options?.path;
    unmatched.push(`${method} ${where ?? JSON.stringify(req).slice(0, 200)}`);
  };
  beforeEach(() => {
    checkNockAgainstOpenapi();
    nockViolations.splice(0);
    nock.disableNetConnect();
    nock.emitter.on("no match", onNoMatch);
  });
  afterEach(() => {
    nock.emitter.removeListener("no match", onNoMatch);
    const pending = nock.pendingMocks();
    const missing = unmatched.splice(0);
    const drift = nockViolations.splice(0);
    nock.cleanAll();
    expect(missing, "requests no interceptor matched").toEqual([]);
    expect(pending, "interceptors no request used").toEqual([]);
    expect(drift, "requests and nock replies GitHub's OpenAPI description does not allow").toEqual(
      [],
    );
  });
}

/** Interceptors for the GitHub API calls intake makes. Each is expected exactly once. */
export function github(owner = "Codertocat", repo = "Hello-World") {
  const api = nock(API);
  const base = `/repos/${owner}/${repo}`;
  const configPath = `/contents/.github%2Ftether.yml`;
  return {
    api,
    token(installationId = 1) {
      api
        .post(`/app/installations/${installationId}/access_tokens`)
        .reply(201, { token: "ghs_test", expires_at: "2099-01-01T00:00:00Z", permissions: {} });
      return this;
    },
    /** GET /app (with the app's JWT): its slug names its bot, `<slug>[bot]`. */
    app(slug = "tether") {
      api.get("/app").reply(200, rest.app(slug));
      return this;
    },
    /** No `.github/tether.yml` in the repository nor in the org's `.github` repository. */
    noConfig() {
      api.get(`${base}${configPath}`).reply(404, { message: "Not Found" });
      api.get(`/repos/${owner}/.github${configPath}`).reply(404, { message: "Not Found" });
      return this;
    },
    config(yaml: string, where = base) {
      api
        .get(`${where}${configPath}`)
        .reply(200, yaml, { "content-type": "text/plain; charset=utf-8" });
      return this;
    },
    permission(username: string, roleName: string, permission = roleName) {
      api.get(`${base}/collaborators/${username}/permission`).reply(200, {
        permission,
        role_name: roleName,
        user: { ...rest.user(username), role_name: roleName },
      });
      return this;
    },
    reactToComment(commentId: number) {
      api
        .post(`${base}/issues/comments/${commentId}/reactions`, { content: "eyes" })
        .reply(201, rest.reaction());
      return this;
    },
    /** The 👀 on a comment on a pull request's diff (its own REST route). */
    reactToReviewComment(commentId: number) {
      api
        .post(`${base}/pulls/comments/${commentId}/reactions`, { content: "eyes" })
        .reply(201, rest.reaction());
      return this;
    },
    reactToIssue(issueNumber: number) {
      api
        .post(`${base}/issues/${issueNumber}/reactions`, { content: "eyes" })
        .reply(201, rest.reaction());
      return this;
    },
    /** The line comments submitted with a review (GET …/pulls/{n}/reviews/{id}/comments). */
    reviewLineComments(pullNumber: number, reviewId: number, comments: unknown[] = []) {
      api
        .get(`${base}/pulls/${pullNumber}/reviews/${reviewId}/comments`)
        .query(true)
        .reply(200, comments);
      return this;
    },
    /** A reply on the issue; its body lands in `bodies` for the test to check. */
    reply(issueNumber: number) {
      const bodies: string[] = [];
      api
        .post(`${base}/issues/${issueNumber}/comments`, (b: { body: string }) => {
          bodies.push(b.body);
          return true;
        })
        .reply(201, rest.issueComment(`${owner}/${repo}`, issueNumber, 9001));
      return { bodies };
    },
  };
}
