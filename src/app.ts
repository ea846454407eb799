import type { ApplicationFunction, Probot } from "probot";
import type { AppDeps } from "./deps.js";
import { INTAKE_EVENTS } from "./intake/events.js";
import { takeDelivery } from "./intake/webhook.js";
import { PUSH_EVENT } from "./intake/config-push.js";
import { processMetrics } from "./metrics.js";
import { dashboardRoutes } from "./web/dashboard-routes.js";
import { healthRoutes } from "./web/health.js";
import { liveRoutes } from "./web/live-routes.js";
import { metricsRoute } from "./web/metrics-route.js";
import { serveHandlers, type Handler, type Served } from "./web/http.js";
import { webhookRoute } from "./web/webhook-route.js";

/**
 * The Probot app: routes webhook events and HTTP paths to their modules. No logic lives here.
 */
export function tetherApp(deps: AppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const intake = takeDelivery({ pool: deps.pool, log: deps.log, appId: deps.env.APP_ID });
    const metrics = processMetrics().useDatabase(deps.pool);
    // Deliveries through Probot (probot.receive in tests; Probot's middleware when the app is
    // loaded into a Probot Server, which Tether itself no longer uses).
    app.on([...INTAKE_EVENTS, PUSH_EVENT], async (context) => {
      await intake(context);
    });
    // What main.ts serves: Tether's own webhook route, with its body cap, in-flight bound and
    // deadline (src/web/webhook-route.ts).
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
    addHandler(liveRoutes(deps));
    addHandler(metricsRoute(deps, metrics));
  };
}

/**
 * Tether's HTTP server as main.ts runs it: every route of tetherApp (the webhook, health,
 * dashboard, metrics) on a plain node:http server with an access log. Probot's own Server is
 * not in the way: its per-request logger and middleware chain were most of what a delivery cost
 * above the inbox write (bench/intake.ts); Probot is kept for what it does well, the app's
 * authentication (`probot.auth`).
 */
export async function serveTether(
  deps: AppDeps,
  probot: Probot,
  opts: { host?: string; port?: number } = {},
): Promise<Served> {
  const handlers: Handler[] = [];
  await tetherApp(deps)(probot, {
    cwd: process.cwd(),
    // Probot's handler type also allows void; a route that says nothing did not answer.
    addHandler: (handler) => handlers.push(async (req, res) => (await handler(req, res)) === true),
  });
  return serveHandlers(handlers, { ...opts, log: deps.log });
}
