/**
 * Development only: forwards the webhooks a smee.io channel (WEBHOOK_PROXY_URL) receives to
 * this server's webhook route, so a GitHub App can deliver to a machine GitHub cannot reach.
 * The client is smee.io's own (smee-client, the one Probot's server used to fetch at start-up);
 * it re-sends each delivery with GitHub's headers, so the route checks its signature as usual.
 */
import { SmeeClient } from "smee-client";
import type { Logger } from "../log.js";

export interface WebhookProxy {
  stop(): Promise<void>;
}

export async function startWebhookProxy(opts: {
  /** The smee.io channel. */
  source: string;
  /** Where deliveries go: this server's webhook route. */
  target: string;
  log: Logger;
}): Promise<WebhookProxy> {
  const say =
    (level: "info" | "error") =>
    (...parts: unknown[]) =>
      opts.log[level](parts.map(String).join(" "));
  const client = new SmeeClient({
    source: opts.source,
    target: opts.target,
    logger: { info: say("info"), error: say("error") },
  });
  await client.start();
  opts.log.info({ source: opts.source, target: opts.target }, "forwarding webhooks from smee.io");
  return { stop: () => client.stop() };
}
