import type { ApplicationFunction } from "probot";
import type { AppDeps } from "./deps.js";
import { INTAKE_EVENTS, takeDelivery } from "./intake/webhook.js";
import { processMetrics } from "./metrics.js";
import { dashboardRoutes } from "./web/dashboard-routes.js";
import { healthRoutes } from "./web/health.js";
import { metricsRoute } from "./web/metrics-route.js";

/**
 * The Probot app: routes webhook events and HTTP paths to their modules. No logic lives here.
 */
export function tetherApp(deps: AppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const intake = takeDelivery({ pool: deps.pool, log: deps.log, appId: deps.env.APP_ID });
    app.on([...INTAKE_EVENTS], async (context) => {
      await intake(context);
    });
    addHandler(healthRoutes(deps));
    addHandler(dashboardRoutes(deps));
    addHandler(metricsRoute(deps, processMetrics().useDatabase(deps.pool)));
  };
}
