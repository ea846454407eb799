import type { AppDeps } from "../deps.js";
import { pathOf, sendJson, type Handler } from "./http.js";

/**
 * How long the database check may take. A health check that hangs is read as "down" by Docker
 * and load balancers only after their own, longer timeout; answering 503 sooner says why.
 */
export const HEALTH_DB_TIMEOUT_MS = 2000;

/**
 * GET /healthz: 200 when the process is up, the database answers and (in a process that runs
 * one) the runner is heartbeating; 503 with the failing check otherwise. The Dockerfile's
 * HEALTHCHECK and the e2e stack poll it.
 */
export function healthRoutes(deps: AppDeps, opts: { dbTimeoutMs?: number } = {}): Handler {
  const dbTimeoutMs = opts.dbTimeoutMs ?? HEALTH_DB_TIMEOUT_MS;
  return async (req, res) => {
    if (req.method !== "GET" || pathOf(req) !== "/healthz") return false;
    const checks: Record<string, string> = { process: "ok" };
    checks.database = await databaseCheck(deps, dbTimeoutMs);
    if (deps.runnerAlive) checks.runner = deps.runnerAlive() ? "ok" : "not heartbeating";
    const sandbox = deps.runnerSandbox?.();
    // A runner that cannot contain its agents runs none: that is a failed check. Off on
    // purpose (TETHER_SANDBOX=off) passes, and says so.
    if (sandbox)
      checks.sandbox = !sandbox.ok
        ? `unavailable: ${sandbox.detail}`
        : sandbox.mode === "off"
          ? "off (TETHER_SANDBOX=off): agents run unsandboxed"
          : "ok";
    const ok = Object.values(checks).every((v) => v === "ok" || v.startsWith("off "));
    return sendJson(res, ok ? 200 : 503, { ok, checks });
  };
}

async function databaseCheck(deps: AppDeps, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  const query = deps.pool.query("select 1").then(
    () => "ok",
    (err: unknown) => `unreachable: ${err instanceof Error ? err.message : String(err)}`,
  );
  try {
    return await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
