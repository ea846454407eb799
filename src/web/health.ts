import type { AppDeps } from "../deps.js";
import { pathOf, sendJson, type Handler } from "./http.js";

/**
 * GET /healthz: 200 when the process is up, the database answers and (in a process that runs
 * one) the runner is heartbeating; 503 with the failing check otherwise.
 */
export function healthRoutes(deps: AppDeps): Handler {
  return async (req, res) => {
    if (req.method !== "GET" || pathOf(req) !== "/healthz") return false;
    const checks: Record<string, string> = { process: "ok" };
    try {
      await deps.pool.query("select 1");
      checks.database = "ok";
    } catch (err) {
      checks.database = `unreachable: ${(err as Error).message}`;
    }
    if (deps.runnerAlive) checks.runner = deps.runnerAlive() ? "ok" : "not heartbeating";
    const ok = Object.values(checks).every((v) => v === "ok");
    return sendJson(res, ok ? 200 : 503, { ok, checks });
  };
}
