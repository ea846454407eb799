/**
 * Counts of the requests this process makes to GitHub (#34, "a request budget per turn"): per
 * installation and kind, and the rate-limit headroom GitHub last reported for each
 * installation. Every request passes the request policy's hook (src/github/request-policy.ts),
 * which records each attempt here (a retry is a request of its own, as GitHub counts it).
 *
 * Kinds: `turn` (a runner's client for one task, which also counts into the task's own
 * RequestCounter), `intake` (an installation client without one: intake's permission check,
 * config read, 👀), `app` (the app's own JWT client: installation tokens). A `304 Not Modified`
 * is counted under `not_modified` instead: GitHub does not charge it against the limit.
 */

export type RequestKind = "turn" | "intake" | "app";

/** One task's requests; the runner stores the count on the task as it finishes. */
export class RequestCounter {
  count = 0;
  notModified = 0;
  /**
   * Set when GitHub's rate limit asked for a longer wait than the request policy takes (epoch
   * ms: when it allows requests again). A turn that failed for it goes back to the queue until
   * then instead of failing (src/runner/rate-limit-defer.ts).
   */
  limitedUntil: number | null = null;
  constructor(readonly installationId: number) {}
}

export interface Headroom {
  remaining: number;
  limit: number | null;
  /** When the window resets (x-ratelimit-reset), epoch seconds; null when not given. */
  resetAt: number | null;
}

export interface RequestTally {
  /** `installation|kind|not_modified` → requests. */
  counts: Map<string, number>;
  headroom: Map<string, Headroom>;
}

/** This process's tally (what /metrics reports). */
export const requestTally: RequestTally = { counts: new Map(), headroom: new Map() };

export interface ObservedResponse {
  status?: number;
  headers?: Record<string, string | number | undefined>;
}

/** Records one request's answer (or failure) under its installation and kind. */
export function recordGithubRequest(
  r: {
    installation: number | undefined;
    kind: RequestKind;
    counter?: RequestCounter | undefined;
    response: ObservedResponse | undefined;
  },
  tally: RequestTally = requestTally,
): void {
  const installation = r.installation === undefined ? "app" : String(r.installation);
  const notModified = r.response?.status === 304;
  const key = `${installation}|${r.kind}|${notModified}`;
  tally.counts.set(key, (tally.counts.get(key) ?? 0) + 1);
  if (r.counter) {
    if (notModified) r.counter.notModified++;
    else r.counter.count++;
  }
  const h = r.response?.headers ?? {};
  const num = (name: string): number | null => {
    const v = h[name];
    const n = v === undefined ? NaN : Number(v);
    return Number.isFinite(n) ? n : null;
  };
  const remaining = num("x-ratelimit-remaining");
  // Only the REST limit ("core") is the installation's headroom: search and GraphQL count apart,
  // with limits and windows of their own.
  const resource = h["x-ratelimit-resource"];
  if (remaining !== null && (resource === undefined || resource === "core"))
    tally.headroom.set(installation, {
      remaining,
      limit: num("x-ratelimit-limit"),
      resetAt: num("x-ratelimit-reset"),
    });
}

/** The tally as rows, for /metrics. */
export function tallyRows(tally: RequestTally = requestTally): {
  installation: string;
  kind: RequestKind;
  notModified: boolean;
  count: number;
}[] {
  return [...tally.counts].map(([key, count]) => {
    const [installation, kind, nm] = key.split("|") as [string, RequestKind, string];
    return { installation, kind, notModified: nm === "true", count };
  });
}
