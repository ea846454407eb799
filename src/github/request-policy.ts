/**
 * How the app's requests to GitHub wait and retry. It stands in for the two Octokit plugins in
 * ProbotOctokit that do this (`@octokit/plugin-throttling` and `@octokit/plugin-retry`), keeping
 * what they decide and dropping their queue, which cost most of a turn's webhook → spawn time
 * (docs/benchmarks.md). A request that needs no waiting goes straight through.
 *
 * What is kept:
 * - a primary rate limit (403/429 with `x-ratelimit-remaining: 0`) is waited out until
 *   `x-ratelimit-reset` plus a second, then retried;
 * - a secondary rate limit (GitHub's message says so, a 403/429 with `retry-after`, or any 429)
 *   is waited out for `retry-after` seconds, or a minute without one: GitHub's rule is "if the
 *   retry-after header is present, wait that long; if x-ratelimit-remaining is 0, wait until
 *   x-ratelimit-reset; otherwise wait at least one minute". Probot's own options gave up on the
 *   first, which lost answers to a burst of writes;
 * - a wait longer than `maxWaitMs` (ten minutes; a primary limit can reset an hour away, and a
 *   `retry-after` can say anything) is not taken: the request fails at once with GitHub's status and headers and a message saying how
 *   long GitHub asked for. The turn does not sit on a runner slot for an hour: what it could not
 *   read fails the turn, an answer it could not post goes to the answer outbox, which tries again
 *   later (src/runner/turn/answer-retry.ts);
 * - 5xx, network failures (Octokit reports them as 500) and other statuses worth another try are
 *   retried after 1, 4 and 9 seconds (`retry-after` when the server gives one);
 * - each kind is retried at most three times;
 * - with spacing on, writes are spaced as GitHub asks of integrators: one at a time and a second
 *   apart, those that notify people (comments, issues, reviews …) three seconds apart, searches
 *   two seconds apart, per installation.
 */
import { throttling } from "@octokit/plugin-throttling";
import { recordGithubRequest, RequestCounter } from "./request-count.js";

export interface RequestPolicyOptions {
  /** Space writes, notifying writes and searches as GitHub asks. */
  spacing: boolean;
  /** Retries of each kind (primary limit, secondary limit, transient failure). */
  retries?: number;
  /** Unit of the transient backoff: attempt n waits n² of these. */
  backoffMs?: number;
  /** A secondary rate limit without `retry-after` is waited out this long (GitHub: a minute). */
  secondaryFallbackMs?: number;
  /** A rate limit that asks for a longer wait than this fails the request instead. */
  maxWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** How the policy answers one failed request. */
export type RetryVerdict =
  | { retry: false }
  /** GitHub asked for a wait longer than the longest the policy takes. */
  | { retry: false; tooLong: { kind: RetryKind; waitMs: number } }
  | { retry: true; kind: RetryKind; waitMs: number };

export type RetryKind = "primary-rate-limit" | "secondary-rate-limit" | "transient";

/** Never retried: the request itself is wrong, or the answer will not change. */
const FINAL_STATUSES = new Set([400, 401, 403, 404, 410, 422, 451]);

interface FailedRequest {
  status?: number;
  message?: string;
  response?: { headers?: Record<string, string | number | undefined> };
}

/**
 * Whether (and after how long) to retry a failed request, given how many retries of each kind
 * it has had. Pure, so every branch is tested as a table.
 */
export function retryVerdict(
  err: unknown,
  tried: Readonly<Record<RetryKind, number>>,
  o: Required<
    Pick<RequestPolicyOptions, "retries" | "backoffMs" | "secondaryFallbackMs" | "maxWaitMs">
  > & {
    now: number;
  },
): RetryVerdict {
  const e = err as FailedRequest;
  const status = typeof e?.status === "number" ? e.status : undefined;
  if (status === undefined) return { retry: false }; // not an HTTP failure Octokit understood
  const headers = e.response?.headers ?? {};
  const header = (name: string) => {
    const v = headers[name];
    return v === undefined ? undefined : String(v);
  };
  const retryAfterMs = (() => {
    const s = Number(header("retry-after"));
    return Number.isFinite(s) && s >= 0 && header("retry-after") !== undefined
      ? s * 1000
      : undefined;
  })();
  const limited = status === 403 || status === 429;
  const verdict = (kind: RetryKind, waitMs: number): RetryVerdict => {
    if (tried[kind] >= o.retries) return { retry: false };
    if (waitMs > o.maxWaitMs) return { retry: false, tooLong: { kind, waitMs } };
    return { retry: true, kind, waitMs };
  };

  if (limited && /\bsecondary rate\b/i.test(e.message ?? ""))
    return verdict("secondary-rate-limit", retryAfterMs ?? o.secondaryFallbackMs);
  if (limited && header("x-ratelimit-remaining") === "0") {
    const reset = Number(header("x-ratelimit-reset")) * 1000;
    const waitS = Number.isFinite(reset) ? Math.max(Math.ceil((reset - o.now) / 1000) + 1, 0) : 60;
    return verdict("primary-rate-limit", waitS * 1000);
  }
  if (limited && retryAfterMs !== undefined) return verdict("secondary-rate-limit", retryAfterMs);
  // A 429 that says nothing of when: GitHub asks for at least a minute, not a quick backoff.
  if (status === 429) return verdict("secondary-rate-limit", o.secondaryFallbackMs);
  if (status >= 400 && !FINAL_STATUSES.has(status)) {
    const n = tried.transient + 1;
    return verdict("transient", retryAfterMs ?? n * n * o.backoffMs);
  }
  return { retry: false };
}

// ---------------------------------------------------------------------------------------------
// Spacing

/**
 * One lane of spacing: starts at least `gapMs` apart. A start is reserved the moment a request
 * asks, so requests that arrive together line up; one that finds the gap elapsed goes at once,
 * without a timer. Like the plugin's groups it spaces starts and does not hold the lane while
 * the request runs.
 */
class Lane {
  nextFree = Number.NEGATIVE_INFINITY;
  constructor(readonly gapMs: number) {}
}

async function spacedStart(
  lanes: readonly Lane[],
  o: Pick<Required<RequestPolicyOptions>, "sleep" | "now">,
): Promise<void> {
  const now = o.now();
  const start = Math.max(now, ...lanes.map((l) => l.nextFree));
  for (const l of lanes) l.nextFree = start + l.gapMs;
  if (start > now) await o.sleep(start - now);
}

// ---------------------------------------------------------------------------------------------
// The plugin

interface RequestOptions {
  method: string;
  url: string;
}

interface PluginOctokit {
  hook: {
    wrap(
      name: "request",
      fn: (request: (o: RequestOptions) => Promise<unknown>, o: RequestOptions) => Promise<unknown>,
    ): void;
  };
  log: { warn(message: string): void };
}

const laneRegistry = new Map<string, Lane>();

function laneFor(key: string, gapMs: number): Lane {
  let lane = laneRegistry.get(key);
  if (!lane) {
    lane = new Lane(gapMs);
    laneRegistry.set(key, lane);
  }
  return lane;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The Octokit plugin. Options come from the Octokit's own options under `requestPolicy`; the
 * spacing lanes are per installation (`auth.installationId`), as GitHub counts.
 */
export function requestPolicy(
  octokit: PluginOctokit,
  options: { requestPolicy?: RequestPolicyOptions; auth?: unknown; githubRequests?: unknown },
): void {
  const given = options.requestPolicy;
  if (!given) return;
  // Every attempt is counted (src/github/request-count.ts): a runner's client counts into its
  // task's counter too (`githubRequests`), under the installation it names.
  const counter =
    options.githubRequests instanceof RequestCounter ? options.githubRequests : undefined;
  const o: Required<RequestPolicyOptions> = {
    retries: 3,
    backoffMs: 1000,
    secondaryFallbackMs: 60_000,
    maxWaitMs: 10 * 60_000,
    sleep: defaultSleep,
    now: Date.now,
    ...given,
  };
  const installation =
    counter?.installationId ??
    (options.auth as { installationId?: number } | undefined)?.installationId;
  const kind = counter ? "turn" : installation === undefined ? "app" : "intake";
  const observe = (response: unknown) =>
    recordGithubRequest({
      installation,
      kind,
      counter,
      response: response as { status?: number; headers?: Record<string, string> } | undefined,
    });
  const who = installation === undefined ? "app" : `installation ${installation}`;

  octokit.hook.wrap("request", async (request, req) => {
    const method = req.method.toUpperCase();
    const { pathname } = new URL(req.url, "http://github.test");
    const lanesOf = (): Lane[] => {
      if (!o.spacing) return [];
      // A token request made while writes wait must not wait behind them.
      const isWrite = method !== "GET" && method !== "HEAD" && !isTokenRequest(method, pathname);
      if (isWrite) {
        const write = laneFor(`${who}:write`, 1000);
        return throttling.triggersNotification(pathname)
          ? [write, laneFor(`${who}:notify`, 3000)]
          : [write];
      }
      if (pathname.startsWith("/search/")) return [laneFor(`${who}:search`, 2000)];
      return [];
    };
    const tried: Record<RetryKind, number> = {
      "primary-rate-limit": 0,
      "secondary-rate-limit": 0,
      transient: 0,
    };
    for (;;) {
      try {
        const lanes = lanesOf();
        if (lanes.length) await spacedStart(lanes, o);
        const response = await request(req);
        observe(response);
        return response;
      } catch (err) {
        // A failure with a status is GitHub's answer (a 304 is one too: Octokit throws it).
        const e = err as { status?: number; response?: { headers?: unknown } };
        observe({ status: e?.status, headers: e?.response?.headers });
        const v = retryVerdict(err, tried, { ...o, now: o.now() });
        if (!v.retry && "tooLong" in v)
          throw waitTooLong(err, v.tooLong, `${method} ${req.url}`, o);
        if (!v.retry) throw err;
        tried[v.kind]++;
        octokit.log.warn(
          `GitHub ${describe(v.kind, err)} on ${method} ${req.url}; retry ${tried[v.kind]} of ${o.retries} in ${Math.round(v.waitMs / 100) / 10} s`,
        );
        await o.sleep(v.waitMs);
      }
    }
  });
}

/**
 * GitHub's error, its message saying how long GitHub asked to wait; status and response are
 * kept, so whoever retries later (the answer outbox, intake) still sees a rate limit.
 */
function waitTooLong(
  err: unknown,
  t: { kind: RetryKind; waitMs: number },
  what: string,
  o: { maxWaitMs: number },
): Error {
  const min = (ms: number) => `${Math.max(1, Math.round(ms / 60_000))} min`;
  const message = `GitHub's ${describe(t.kind, err)} on ${what} asks to wait ${min(t.waitMs)}, longer than the ${min(o.maxWaitMs)} Tether waits; try again later`;
  if (err instanceof Error) {
    err.message = message;
    return err;
  }
  return new Error(message);
}

/** Requests for tokens (installation, OAuth): never spaced, as the throttling plugin does. */
function isTokenRequest(method: string, pathname: string): boolean {
  return (
    (method === "POST" &&
      (/^\/app\/installations\/[^/]+\/access_tokens$/.test(pathname) ||
        /^\/applications\/[^/]+\/token$/.test(pathname) ||
        pathname === "/login/oauth/access_token")) ||
    (method === "PATCH" && /^\/applications\/[^/]+\/token\/scoped$/.test(pathname))
  );
}

function describe(kind: RetryKind, err: unknown): string {
  const status = (err as FailedRequest).status;
  if (kind === "primary-rate-limit") return `rate limit (${status})`;
  if (kind === "secondary-rate-limit") return `secondary rate limit (${status})`;
  return `error ${status}`;
}
