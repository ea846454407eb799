import type { AppDeps } from "../deps.js";
import type { Metrics } from "../metrics.js";
import { metricsAccess } from "./access.js";
import { pathOf, sendJson, type Handler } from "./http.js";

/** GET /metrics: Prometheus text format; behind TETHER_METRICS_TOKEN when that is set. */
export function metricsRoute(deps: Pick<AppDeps, "env" | "log">, metrics: Metrics): Handler {
  const token = deps.env.TETHER_METRICS_TOKEN;
  return async (req, res) => {
    if (pathOf(req) !== "/metrics" || req.method !== "GET") return false;
    const access = metricsAccess(req, token);
    if (!access.ok) {
      res.setHeader("www-authenticate", 'Bearer realm="tether-metrics"');
      return sendJson(res, access.status, { error: access.reason });
    }
    try {
      const text = await metrics.render();
      res.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" });
      res.end(text);
      return true;
    } catch (err) {
      deps.log.error({ err }, "rendering /metrics failed");
      return sendJson(res, 500, { error: `Could not render metrics: ${(err as Error).message}` });
    }
  };
}
