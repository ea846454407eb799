import type { ApplicationFunction } from "probot";
import type { AppDeps } from "./deps.js";
import { INTAKE_EVENTS, takeDelivery } from "./intake/webhook.js";
import { healthRoutes } from "./web/health.js";

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
  };
}
