import type { ApplicationFunction } from "probot";
import type { AppDeps } from "./deps.js";
import { INTAKE_EVENTS, takeDelivery } from "./intake/webhook.js";
import { processMetrics } from "./metrics.js";
import { dashboardRoutes } from "./web/dashboard-routes.js";
import { healthRoutes } from "./web/health.js";
import { metricsRoute } from "./web/metrics-route.js";
import { webhookRoute } from "./web/webhook-route.js";

/**
 * Where Probot's own webhook middleware listens when Tether serves /api/github/webhooks itself
 * (main.ts). A webhook proxy in development (WEBHOOK_PROXY_URL) forwards here.
 */
export const PROBOT_WEBHOOK_PATH = "/api/github/webhooks/probot";

/**
 * The Probot app: routes webhook events and HTTP paths to their modules. No logic lives here.
 */
export function tetherApp(deps: AppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const intake = takeDelivery({ pool: deps.pool, log: deps.log, appId: deps.env.APP_ID });
    // Deliveries through Probot (a development webhook proxy, probot.receive in tests).
    app.on([...INTAKE_EVENTS], async (context) => {
      await intake(context);
    });
    // Reached only when the Server's webhookPath is moved out of the way (main.ts does).
    addHandler(
      webhookRoute({
        secret: deps.env.WEBHOOK_SECRET ?? "development",
        take: intake,
        log: deps.log,
      }),
    );
    addHandler(healthRoutes(deps));
    addHandler(dashboardRoutes(deps));
    addHandler(metricsRoute(deps, processMetrics().useDatabase(deps.pool)));
  };
}
