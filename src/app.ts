import type { ApplicationFunction } from "probot";
import type { AppDeps } from "./deps.js";
import { healthRoutes } from "./web/health.js";

/**
 * The Probot app: routes webhook events and HTTP paths to their modules. No logic lives here.
 */
export function tetherApp(deps: AppDeps): ApplicationFunction {
  return (_app, { addHandler }) => {
    addHandler(healthRoutes(deps));
  };
}
