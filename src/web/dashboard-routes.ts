import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { parseConversationPath, type ConversationRoute } from "../core/conversation-path.js";
import type { AppDeps } from "../deps.js";
import type { TaskKey } from "../core/task.js";
import { debugTranscriptSession, readChain } from "../sql/stats/conversation.js";
import { repoIdByName } from "../sql/tasks/read.js";
import { transcriptChunks } from "../sql/transcripts.js";
import type { Stats } from "../sql/stats/figures.js";
import { STATS_CLIS } from "../cli-registry.js";
import { readStats, type ReadStatsOptions } from "../sql/stats/read.js";
import { DEFAULT_STATS_TIMEOUT_MS, StatsTimeoutError } from "../sql/stats/snapshot.js";
import { StatsRange } from "../sql/stats/window.js";
import {
  clearSessionCookieHeader,
  dashboardAccess,
  hostAllowed,
  hostRefusal,
  isHttps,
  sameSecret,
  sessionCookieHeader,
  sessionCookieValue,
} from "./access.js";
import { requestTally } from "../github/request-count.js";
import { readHeadroom } from "../sql/rate-limits.js";
import type { DashboardStats } from "./browser/stats.js";
import { conversationPage, noConversationPage } from "./conversation-page.js";
import { dashboardPage, forbiddenPage, loginPage } from "./dashboard-page.js";
import { pathOf, sendHtml, sendJson, type Handler } from "./http.js";

export const StatsQuery = z.object({
  /**
   * The window: 24h (the current UTC hour and the 23 before it, hourly points), 7d or 30d
   * (the current UTC day and the 6 or 29 before it, daily points).
   */
  range: StatsRange.default("24h"),
});
export type StatsQuery = z.infer<typeof StatsQuery>;

export interface DashboardOptions {
  /** The stats query's statement timeout. */
  statsTimeoutMs?: number;
}

/** Longest login form body we read; a token is at most a few hundred bytes. */
const MAX_FORM_BYTES = 8 * 1024;

/**
 * GET /dashboard (the page), POST /dashboard/login and /dashboard/logout (the browser's way in
 * and out), GET /api/stats (the page's figures as JSON); one conversation's chain at
 * GET /dashboard/conversations/<owner>/<name>/<issue>/<agent> (HTML) and /api/conversations/…
 * (JSON), and a poisoned or retired session's stored transcript at …/transcripts/<session>.
 * Access rules are in access.ts: first the Host, then the token, for every one of them.
 */
export function dashboardRoutes(deps: AppDeps, opts: DashboardOptions = {}): Handler {
  const token = deps.dashboardToken ?? deps.env.TETHER_DASHBOARD_TOKEN;
  const publicHosts = deps.env.TETHER_PUBLIC_HOSTS ?? [];
  const now = deps.now ?? (() => new Date());
  const stats = singleFlight((o: ReadStatsOptions) => readStats(deps.pool, o));
  const log = deps.log.child({ component: "dashboard" });

  return async (req, res) => {
    const path = pathOf(req);
    const isApi = path === "/api/stats" || path.startsWith("/api/conversations/");
    if (!isApi && !path.startsWith("/dashboard")) return false;
    const offered = takeTokenParam(req);
    if (!hostAllowed(req.headers.host, publicHosts)) {
      // Before anything else, sign-in form included: a page that rebound its own name to this
      // machine gets nothing to show or to post to. 421: this server will not answer for that
      // name (RFC 9110, 15.5.20).
      const reason = hostRefusal(req.headers.host);
      log.warn(
        { host: req.headers.host?.slice(0, 200), path },
        "dashboard request for another host refused",
      );
      return isApi
        ? sendJson(res, 421, { error: reason })
        : sendHtml(res, 421, (n) => forbiddenPage(n, reason));
    }
    if (path === "/api/stats" && req.method === "GET") return apiStats(req, res);
    if (path === "/dashboard" || path === "/dashboard/") {
      if (req.method === "GET" || req.method === "HEAD") return page(req, res, offered);
      return sendMethodNotAllowed(res, "GET");
    }
    const conv = parseConversationPath(path);
    if (conv) {
      if (req.method !== "GET" && req.method !== "HEAD") return sendMethodNotAllowed(res, "GET");
      return conversation(req, res, conv, offered);
    }
    if (path.startsWith("/api/conversations/")) {
      return sendJson(res, 404, {
        error: "Not a conversation: use /api/conversations/<owner>/<name>/<issue>/<agent>.",
      });
    }
    if (path === "/dashboard/login") {
      if (req.method === "POST") return login(req, res);
      return redirect(res, "/dashboard");
    }
    if (path === "/dashboard/logout" && req.method === "POST") {
      res.setHeader("set-cookie", clearSessionCookieHeader());
      return redirect(res, "/dashboard");
    }
    return false;
  };

  async function apiStats(req: IncomingMessage, res: ServerResponse): Promise<true> {
    const access = dashboardAccess(req, token, now());
    if (!access.ok) {
      if (access.status === 401) res.setHeader("www-authenticate", 'Bearer realm="tether"');
      return sendJson(res, access.status, { error: access.reason });
    }
    const params = Object.fromEntries(new URL(req.url ?? "/", "http://x").searchParams);
    const query = StatsQuery.safeParse(params);
    if (!query.success) {
      return sendJson(res, 400, {
        error: `Invalid query for /api/stats: ${z.prettifyError(query.error)}`,
      });
    }
    const started = performance.now();
    let body: Stats;
    try {
      body = await stats({
        range: query.data.range,
        now: now(),
        timeoutMs: opts.statsTimeoutMs,
        clis: STATS_CLIS,
      });
    } catch (err) {
      if (err instanceof StatsTimeoutError) {
        log.warn({ err, range: query.data.range }, "stats query timed out");
        return sendJson(res, 503, { error: err.message });
      }
      log.error({ err }, "stats query failed");
      return sendJson(res, 500, {
        error: `Could not read statistics from Postgres: ${(err as Error).message}`,
      });
    }
    res.setHeader("server-timing", `db;dur=${(performance.now() - started).toFixed(1)}`);
    // What the page's script reads of it (browser/stats.d.ts): checked here, at compile time.
    // GitHub's rate-limit headroom: what every process stored (src/sql/rate-limits.ts), with how
    // many tasks wait for each reset; this process's own last responses for the rest.
    const githubHeadroom: NonNullable<DashboardStats["githubHeadroom"]> = Object.fromEntries(
      requestTally.headroom,
    );
    try {
      Object.assign(
        githubHeadroom,
        await readHeadroom(deps.pool, deps.env.TETHER_RATE_LIMIT_RESERVE ?? 0),
      );
    } catch (err) {
      log.warn({ err }, "could not read the stored rate-limit headroom");
    }
    return sendJson(res, 200, { ...body, githubHeadroom } satisfies DashboardStats);
  }

  async function page(
    req: IncomingMessage,
    res: ServerResponse,
    offered: string | undefined,
  ): Promise<true> {
    if (offered !== undefined && token !== undefined) {
      // A link with ?token= signs the browser in, then the redirect takes the token out of the
      // address bar (and so out of its history and of any Referer).
      if (!sameSecret(offered, token)) {
        return sendHtml(res, 401, (n) => loginPage(n, "That token does not match."));
      }
      res.setHeader(
        "set-cookie",
        sessionCookieHeader(sessionCookieValue(token, now()), isHttps(req)),
      );
      // req.url no longer holds the token (takeTokenParam); keep the rest, e.g. ?range=7d.
      const url = new URL(req.url ?? "/", "http://x");
      return redirect(res, `${url.pathname}${url.search}`);
    }
    const access = dashboardAccess(req, token, now());
    if (!access.ok) {
      return access.status === 401
        ? sendHtml(res, 401, (n) => loginPage(n))
        : sendHtml(res, 403, (n) => forbiddenPage(n, access.reason));
    }
    return sendHtml(res, 200, (n) => dashboardPage(n, { signOut: access.via === "cookie" }));
  }

  async function conversation(
    req: IncomingMessage,
    res: ServerResponse,
    route: ConversationRoute,
    offered: string | undefined,
  ): Promise<true> {
    if (route.kind === "page") {
      // The sign-in, the ?token= link and the refusals are the dashboard's own.
      if (offered !== undefined) return page(req, res, offered);
      const access = dashboardAccess(req, token, now());
      if (!access.ok) {
        return access.status === 401
          ? sendHtml(res, 401, (n) => loginPage(n, undefined, pathOf(req)))
          : sendHtml(res, 403, (n) => forbiddenPage(n, access.reason));
      }
    } else {
      const access = dashboardAccess(req, token, now());
      if (!access.ok) {
        if (access.status === 401) res.setHeader("www-authenticate", 'Bearer realm="tether"');
        if (route.kind === "api") return sendJson(res, access.status, { error: access.reason });
        res.writeHead(access.status, {
          "content-type": "text/plain; charset=utf-8",
          "cache-control": "no-store",
        });
        res.end(`${access.reason}\n`);
        return true;
      }
    }
    const named = `${route.key.repo}#${route.key.issueNumber} (agent ${route.key.agent})`;
    try {
      const repoId = await repoIdByName(deps.pool, route.key.repo);
      // No task under that name: id 0, which no repository has, so nothing is found below.
      const key = { ...route.key, repoId: repoId ?? 0 };
      if (route.kind === "transcript") return await transcript(res, route, key, named);
      const chain = await readChain(
        deps.pool,
        key,
        opts.statsTimeoutMs ?? DEFAULT_STATS_TIMEOUT_MS,
      );
      if (!chain) {
        const what = `Tether has no task for ${named}.`;
        return route.kind === "api"
          ? sendJson(res, 404, { error: what })
          : sendHtml(res, 404, (n) => noConversationPage(n, what));
      }
      if (route.kind === "api") return sendJson(res, 200, chain);
      const via = dashboardAccess(req, token, now());
      return sendHtml(res, 200, (n) =>
        conversationPage(n, chain, { signOut: via.ok && via.via === "cookie" }),
      );
    } catch (err) {
      const timedOut = err instanceof StatsTimeoutError;
      if (timedOut) log.warn({ err, key: route.key }, "conversation query timed out");
      else log.error({ err, key: route.key }, "conversation query failed");
      const what = timedOut
        ? err.message
        : `Could not read the conversation from Postgres: ${(err as Error).message}`;
      if (route.kind === "api") return sendJson(res, timedOut ? 503 : 500, { error: what });
      return sendHtml(res, timedOut ? 503 : 500, (n) => forbiddenPage(n, what));
    }
  }

  /**
   * A poisoned or retired session's stored transcript, as stored: its gzip'd chunks one after
   * another (a multi-member gzip file, which gunzip reads whole). Transcripts hold repository
   * contents and the agent's tool output: token-gated like the rest, never cached.
   */
  async function transcript(
    res: ServerResponse,
    route: ConversationRoute,
    key: TaskKey,
    named: string,
  ) {
    const sessionId = route.sessionId ?? "";
    const found = await debugTranscriptSession(deps.pool, key, sessionId);
    if (!found) {
      res.writeHead(404, {
        "content-type": "text/plain; charset=utf-8",
        "cache-control": "no-store",
      });
      res.end(
        `No downloadable transcript for session ${sessionId} of ${named}: only a poisoned or ` +
          "retired session's is offered, while it is kept (TETHER_DEBUG_KEEP_HOURS).\n",
      );
      return true as const;
    }
    const chunks = await transcriptChunks(deps.pool, key, sessionId);
    log.info({ sessionId, key: route.key, state: found.state }, "session transcript downloaded");
    res.writeHead(200, {
      "content-type": "application/gzip",
      "content-disposition": `attachment; filename="${sessionId}.jsonl.gz"`,
      "content-length": String(chunks.reduce((n, c) => n + c.data.length, 0)),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    });
    for (const c of chunks) res.write(c.data);
    res.end();
    return true as const;
  }

  async function login(req: IncomingMessage, res: ServerResponse): Promise<true> {
    // Nothing to sign in to: the page says why (dashboardAccess refuses without a token).
    if (token === undefined) return page(req, res, undefined);
    let form: URLSearchParams;
    try {
      form = new URLSearchParams(await readBody(req, MAX_FORM_BYTES));
    } catch (err) {
      return sendHtml(res, 413, (n) => loginPage(n, (err as Error).message));
    }
    const offered = form.get("token") ?? "";
    const next = nextPage(form.get("next"));
    if (!sameSecret(offered, token)) {
      log.info({ remote: req.socket.remoteAddress }, "dashboard sign-in with a wrong token");
      return sendHtml(res, 401, (n) => loginPage(n, "That token does not match.", next));
    }
    res.setHeader(
      "set-cookie",
      sessionCookieHeader(sessionCookieValue(token, now()), isHttps(req)),
    );
    return redirect(res, next ?? "/dashboard");
  }
}

/**
 * Takes a `token` query parameter out of the request, rewriting req.url without it, so the
 * access log line written when the response finishes (Probot's HTTP logger prints req.url)
 * never carries the token.
 */
function takeTokenParam(req: IncomingMessage): string | undefined {
  const url = new URL(req.url ?? "/", "http://x");
  const offered = url.searchParams.get("token");
  if (offered === null) return undefined;
  url.searchParams.delete("token");
  req.url = `${url.pathname}${url.search}`;
  return offered;
}

/** Where a sign-in may send the browser on: a conversation page of this dashboard, nothing else. */
function nextPage(next: string | null): string | undefined {
  if (!next) return undefined;
  const route = parseConversationPath(next);
  return route?.kind === "page" && next.startsWith("/dashboard/conversations/") ? next : undefined;
}

function redirect(res: ServerResponse, location: string): true {
  res.writeHead(303, { location, "cache-control": "no-store" });
  res.end();
  return true;
}

function sendMethodNotAllowed(res: ServerResponse, allow: string): true {
  res.writeHead(405, { allow, "content-type": "text/plain; charset=utf-8" });
  res.end(`Method not allowed; use ${allow}.\n`);
  return true;
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error(`The form is larger than ${limit} bytes.`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * Concurrent requests for the same figures share one query: ten open dashboards refreshing at
 * once cost the database one aggregate, not ten. Nothing is kept once the query has finished.
 */
function singleFlight(
  fn: (o: ReadStatsOptions) => Promise<Stats>,
): (o: ReadStatsOptions) => Promise<Stats> {
  const running = new Map<string, Promise<Stats>>();
  return (o) => {
    // Requests within the same second ask the same question.
    const key = `${o.range}|${Math.floor(o.now.getTime() / 1000)}`;
    const existing = running.get(key);
    if (existing) return existing;
    const p = fn(o).finally(() => running.delete(key));
    running.set(key, p);
    return p;
  };
}
