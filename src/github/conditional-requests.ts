/**
 * Conditional requests (#34, "cut what can be cut"). GitHub does not count a request answered
 * `304 Not Modified` against the installation's rate limit, and most of what a turn reads (the
 * config, the issue, the asker's permission, branches, users) rarely changes. So the last answer
 * to each such GET is kept (src/sql/github-cache.ts) and the next one asks with its validator:
 * `If-None-Match: <ETag>` when this token got that ETag, else `If-Modified-Since:
 * <Last-Modified>` when GitHub gave one. A 304 is answered with the kept body, as if GitHub had
 * sent it again.
 *
 * Why the token matters: GitHub's ETags are per token (GitHub support confirmed it; an ETag
 * another token got brings a 200), and an installation token lives an hour, one per process and
 * scope. Last-Modified is good for any token, so one runner's answer saves another's request:
 * GitHub still answers each token as its scope allows.
 *
 * The repository config is read from the default branch (`contents` without `ref`); its answer,
 * a 404 included, is pinned: served without asking until a push to that repository's default
 * branch (src/intake/config-push.ts) or an hour at most, then asked conditionally again. Only
 * once a push to that repository has been seen: an app registered without the `push` event
 * would otherwise miss an edit of the file for that hour. A pinned answer is served only to a
 * token of the scope that got it (the repositories and permissions GitHub granted the token,
 * tokenScope below): the intake's token covers the whole installation, a turn's one repository,
 * and GitHub answers a repository outside a token's scope with a 404 (#38).
 *
 * The cache never fails a request: when Postgres does not answer, GitHub is asked as before.
 */
import { createHash } from "node:crypto";
import {
  lookUpAnswer,
  pruneAnswers,
  storeAnswer,
  type CacheKey,
  type CachedAnswer,
  type StoredAnswer,
} from "../sql/github-cache.js";
import type { Queryable } from "../sql/db.js";
import { RequestCounter } from "./request-count.js";

/** The reads asked conditionally: route templates as Octokit names them. */
export const CONDITIONAL_ROUTES: ReadonlySet<string> = new Set([
  "/repos/{owner}/{repo}/contents/{path}",
  "/repos/{owner}/{repo}/issues/{issue_number}",
  "/repos/{owner}/{repo}/pulls/{pull_number}",
  "/repos/{owner}/{repo}/collaborators/{username}/permission",
  "/repos/{owner}/{repo}/branches/{branch}",
  "/users/{username}",
]);
const CONTENTS_ROUTE = "/repos/{owner}/{repo}/contents/{path}";
/** Bodies larger than this are not kept (a config is capped at 64 KB, an issue body at 64 K chars). */
const MAX_BODY_CHARS = 512 * 1024;
/** The answer headers kept with a body (the config plugin reads content-type). */
const KEPT_HEADERS = ["content-type", "etag", "last-modified"] as const;

/** Where answers are kept: Postgres in production (postgresAnswers), anything alike in tests. */
export interface AnswerStore {
  lookUp(k: CacheKey): Promise<{ readAt: string; hit: CachedAnswer | undefined }>;
  store(
    k: CacheKey,
    a: StoredAnswer,
    o: { validatedAt: string; pinScope: string | null },
  ): Promise<void>;
}

/**
 * The answers in Postgres. Old ones are pruned by whichever process stores one, at most once an
 * hour each (a pruning that fails is tried again an hour later: nothing depends on it).
 */
export function postgresAnswers(db: Queryable, pruneEveryMs = 3600_000): AnswerStore {
  let prunedAt = 0;
  return {
    lookUp: (k) => lookUpAnswer(db, k),
    store: async (k, a, o) => {
      await storeAnswer(db, k, a, o);
      if (Date.now() - prunedAt < pruneEveryMs) return;
      prunedAt = Date.now();
      await pruneAnswers(db).catch(() => {});
    },
  };
}

type Headers = Record<string, string | number | undefined>;

interface Endpoint {
  method: string;
  url: string;
  headers?: Headers;
  request?: Record<string, unknown>;
  [param: string]: unknown;
}

interface Response {
  status: number;
  url: string;
  headers: Headers;
  data: unknown;
}

interface PluginOctokit {
  hook: {
    wrap(
      name: "request",
      fn: (request: (o: Endpoint) => Promise<Response>, o: Endpoint) => Promise<Response>,
    ): void;
  };
  request: { endpoint: { parse(o: Endpoint): { method: string; url: string; headers: Headers } } };
  auth(o?: unknown): Promise<unknown>;
  log: { warn(message: string): void; debug?(message: string): void };
}

/** A token's fingerprint: which token an ETag belongs to, never the token itself. */
export function tokenFingerprint(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 16);
}

/** What the app's auth says about an installation token (@octokit/auth-app's result). */
interface TokenGrant {
  token?: unknown;
  permissions?: unknown;
  repositorySelection?: unknown;
  repositoryIds?: unknown;
  repositoryNames?: unknown;
}

/**
 * What a token may read, as a fingerprint: the repositories and permissions GitHub granted it.
 * Tokens minted alike (the next hour's, another runner's) share it. A token whose grant is not
 * known (one given as is) is a scope of its own.
 */
export function tokenScope(auth: TokenGrant, token: string): string {
  const perms = auth.permissions;
  if (typeof auth.repositorySelection !== "string" || !perms || typeof perms !== "object")
    return `token:${tokenFingerprint(token)}`;
  const list = (v: unknown) =>
    Array.isArray(v) ? v.map((x) => String(x).toLowerCase()).sort() : null;
  const grant = JSON.stringify([
    auth.repositorySelection,
    list(auth.repositoryIds),
    // Names only when no ids: the app's auth gives both for a token minted for repositories.
    auth.repositoryIds === undefined ? list(auth.repositoryNames) : null,
    Object.entries(perms as Record<string, unknown>)
      .map(([k, v]) => `${k}=${String(v)}`)
      .sort(),
  ]);
  return `grant:${createHash("sha256").update(grant).digest("hex").slice(0, 16)}`;
}

/**
 * The Octokit plugin. Options: `conditionalRequests` (an AnswerStore; without it the plugin does
 * nothing) and the installation as the request policy finds it (the task's counter, or
 * `auth.installationId`). Registered after the request policy, so the policy sees (and counts)
 * GitHub's 304 as it came, and this hook turns it into the kept answer.
 */
export function conditionalRequests(
  octokit: PluginOctokit,
  options: { conditionalRequests?: unknown; auth?: unknown; githubRequests?: unknown },
): void {
  const store = options.conditionalRequests as AnswerStore | undefined;
  if (!store) return;
  const installationId =
    options.githubRequests instanceof RequestCounter
      ? options.githubRequests.installationId
      : (options.auth as { installationId?: number } | undefined)?.installationId;
  if (installationId === undefined) return; // the app's own (JWT) client: nothing to keep

  const warn = (what: string, err: unknown) =>
    octokit.log.warn(
      `conditional requests: ${what} failed (${err instanceof Error ? err.message : String(err)}); asking GitHub unconditionally`,
    );

  octokit.hook.wrap("request", async (request, options) => {
    if (options.method.toUpperCase() !== "GET" || !CONDITIONAL_ROUTES.has(options.url))
      return request(options);
    let key: CacheKey;
    let looked: { readAt: string; hit: CachedAnswer | undefined };
    try {
      const auth = (await octokit.auth({ type: "installation" })) as TokenGrant;
      const token = auth.token;
      if (typeof token !== "string") return request(options);
      const parsed = octokit.request.endpoint.parse(options);
      key = {
        installationId,
        request: `${parsed.url} ${String(parsed.headers.accept ?? "")}`,
        tokenFingerprint: tokenFingerprint(token),
        tokenScope: tokenScope(auth, token),
      };
      looked = await store.lookUp(key);
    } catch (err) {
      warn("the lookup", err);
      return request(options);
    }
    const { hit, readAt } = looked;
    const pinScope = pinScopeOf(options);
    if (hit?.fresh && pinScope !== null) return serve(hit, options);

    const validator: Record<string, string> = {};
    if (hit?.status === 200) {
      if (hit.sameToken && hit.etag) validator["if-none-match"] = hit.etag;
      else if (hit.lastModified) validator["if-modified-since"] = hit.lastModified;
      else if (hit.etag) validator["if-none-match"] = hit.etag;
    }
    const keep = async (a: StoredAnswer) => {
      try {
        await store.store(key, a, { validatedAt: readAt, pinScope });
      } catch (err) {
        warn("keeping the answer", err);
      }
    };
    let response: Response;
    try {
      // In place: Octokit's hooks are each bound to the one options object, and an outer hook's
      // argument never reaches the inner ones (before-after-hook), only that object does.
      options.headers = { ...options.headers, ...validator };
      response = await request(options);
    } catch (err) {
      const e = err as { status?: number; response?: { headers?: Headers } };
      if (e?.status === 304 && hit) {
        const headers = e.response?.headers ?? {};
        const etag = header(headers, "etag") ?? (hit.sameToken ? hit.etag : null);
        await keep({
          ...hit,
          etag,
          lastModified: header(headers, "last-modified") ?? hit.lastModified,
        });
        return {
          status: 200,
          url: (e.response as { url?: string } | undefined)?.url ?? options.url,
          headers: { ...headers, ...hit.headers, ...(etag ? { etag } : {}) },
          data: hit.body,
        };
      }
      // A file that is not there is an answer too, for the config (a repository without one).
      if (e?.status === 404 && pinScope !== null)
        await keep({ etag: null, lastModified: null, status: 404, headers: {}, body: null });
      throw err;
    }
    if (response.status === 200 && fits(response.data)) {
      const kept: Record<string, string> = {};
      for (const name of KEPT_HEADERS) {
        const v = header(response.headers, name);
        if (v !== null) kept[name] = v;
      }
      const etag = header(response.headers, "etag");
      const lastModified = header(response.headers, "last-modified");
      if (etag || lastModified || pinScope !== null)
        await keep({ etag, lastModified, status: 200, headers: kept, body: response.data });
    }
    return response;
  });
}

/**
 * The scope a read is pinned under: a file of the default branch (no `ref`) belongs to its
 * repository, `owner/name` lower case; anything else is never pinned.
 */
function pinScopeOf(o: Endpoint): string | null {
  if (o.url !== CONTENTS_ROUTE || (o.ref !== undefined && o.ref !== null)) return null;
  if (typeof o.owner !== "string" || typeof o.repo !== "string") return null;
  return `${o.owner}/${o.repo}`.toLowerCase();
}

/** A kept answer as Octokit gives one: a 200, or a 404 thrown as its RequestError would be. */
function serve(hit: CachedAnswer, o: Endpoint): Response {
  if (hit.status === 200)
    return { status: 200, url: o.url, headers: { ...hit.headers }, data: hit.body };
  throw Object.assign(new Error("Not Found (kept answer)"), {
    name: "HttpError",
    status: hit.status,
    response: { status: hit.status, url: o.url, headers: { ...hit.headers }, data: hit.body },
  });
}

function header(h: Headers, name: string): string | null {
  const v = h[name];
  return v === undefined || v === "" ? null : String(v);
}

function fits(data: unknown): boolean {
  if (typeof data === "string") return data.length <= MAX_BODY_CHARS;
  if (data === null || typeof data !== "object") return data !== undefined;
  try {
    return JSON.stringify(data).length <= MAX_BODY_CHARS;
  } catch {
    return false;
  }
}
