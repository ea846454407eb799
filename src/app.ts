import type { ApplicationFunction } from "probot";
import type { AppDeps } from "./deps.js";
import { INTAKE_EVENTS, takeDelivery } from "./intake/webhook.js";
import { processMetrics } from "./metrics.js";
import { dashboardRoutes } from "./web/dashboard-routes.js";
import { healthRoutes } from "./web/health.js";
import { metricsRoute } from "./web/metrics-route.js";
import { WEBHOOK_PATH, webhookRoute } from "./web/webhook-route.js";

/**
 * The webhookPath main.ts gives Probot's Server, so that Tether's own route
 * (src/web/webhook-route.ts, with its body cap, in-flight bound and deadline) is the only one
 * that reads a delivery. Probot's middleware takes a request only when its URL's pathname
 * equals this string, and a pathname never holds a `?`, so the middleware never takes one:
 * every POST reaches Tether's route (or a 404). A development webhook proxy (WEBHOOK_PROXY_URL)
 * forwards to `http://<host>:<port>` + this string, whose path is Tether's route; the query is
 * ignored there.
 */
export const PROBOT_WEBHOOK_PATH = `${WEBHOOK_PATH}?via=probot`;

/**
 * The Probot app: routes webhook events and HTTP paths to their modules. No logic lives here.
 */
export function tetherApp(deps: AppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const intake = takeDelivery({ pool: deps.pool, log: deps.log, appId: deps.env.APP_ID });
    const metrics = processMetrics().useDatabase(deps.pool);
    // Deliveries through Probot (probot.receive in tests; Probot's middleware when a Server
    // keeps its default webhookPath).
    app.on([...INTAKE_EVENTS], async (context) => {
      await intake(context);
    });
    // Reached only when the Server's webhookPath is moved out of the way (main.ts does).
    addHandler(
      webhookRoute({
        secret: deps.env.WEBHOOK_SECRET ?? "development",
        take: intake,
        log: deps.log,
        limits: { maxBodyBytes: deps.env.TETHER_WEBHOOK_MAX_BYTES },
        refused: (reason) => metrics.recordWebhookRefused(reason),
      }),
    );
    addHandler(healthRoutes(deps));
    addHandler(dashboardRoutes(deps));
    addHandler(metricsRoute(deps, metrics));
  };
}
