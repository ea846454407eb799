import { generateKeyPairSync } from "node:crypto";
import { Probot, ProbotOctokit } from "probot";
import { tetherApp } from "../../src/app.js";
import type { AppDeps } from "../../src/deps.js";
import { loadEnv } from "../../src/env.js";
import { appBotLogin } from "../../src/github/app-login.js";
import { IntakeProcessor, type IntakeProcessorOptions } from "../../src/intake/processor.js";
import type { DescribeStatus } from "../../src/intake/status.js";
import { countDeliveries } from "../../src/sql/deliveries.js";
import { createLogger } from "../../src/log.js";
import type { TestDatabase } from "./db.js";

export const APP_ID = 4242;
export const WEBHOOK_SECRET = "test-webhook-secret";

let privateKey: string | undefined;
/** One RSA key per test process: Probot signs its app JWT with it (GitHub is mocked). */
export function testPrivateKey(): string {
  privateKey ??= generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  }).privateKey;
  return privateKey;
}

/**
 * Octokit as in production, minus retries and throttling, which would only slow tests down.
 * A function, not an object: Probot passes its own `throttle` options to the constructor,
 * which would replace an object default's `throttle: {enabled: false}` wholesale and leave
 * the write limiter (one POST a second per installation) on.
 */
export const TestOctokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
  ...options,
  retry: { enabled: false },
  throttle: { ...(options.throttle as object | undefined), enabled: false },
}));

export interface TestApp {
  probot: Probot;
  processor: IntakeProcessor;
  deps: AppDeps;
  /** Deliver a webhook through Probot (as the HTTP middleware does after verifying it). */
  receive(name: string, payload: object, id?: string): Promise<void>;
  /** Deliver, then let the processor handle everything pending. */
  deliver(name: string, payload: object, id?: string): Promise<void>;
  /** Process until no delivery is pending, including ones waiting a few ms to retry (≤ 5 s). */
  settle(): Promise<void>;
}

let deliveries = 0;

/**
 * A Probot instance loaded with the real Tether app, and an intake processor on the test's
 * database that gets its installation Octokit from that Probot (`app.auth`), as in main.ts.
 * The processor does not LISTEN: tests drive it with processPending().
 */
export async function createTestApp(
  db: TestDatabase,
  opts: { describeStatus?: DescribeStatus; processor?: Partial<IntakeProcessorOptions> } = {},
): Promise<TestApp> {
  const log = createLogger(process.env.TETHER_TEST_LOG ?? "silent");
  const env = loadEnv({
    APP_ID: String(APP_ID),
    PRIVATE_KEY: testPrivateKey(),
    WEBHOOK_SECRET,
    LOG_LEVEL: "silent",
  });
  const deps: AppDeps = { env, log, pool: db.pool, describeStatus: opts.describeStatus };
  const probot = new Probot({
    appId: APP_ID,
    privateKey: testPrivateKey(),
    secret: WEBHOOK_SECRET,
    Octokit: TestOctokit,
    log,
  });
  await probot.load(tetherApp(deps), { cwd: process.cwd(), addHandler: () => {} });
  const processor = new IntakeProcessor({
    pool: db.pool,
    log,
    auth: (id) => probot.auth(id),
    appId: APP_ID,
    appLogin: async () => appBotLogin(await probot.auth()),
    describeStatus: opts.describeStatus,
    listen: false,
    backoffMs: () => 0,
    waitMs: 5,
    ...opts.processor,
  });
  const receive = async (name: string, payload: object, id?: string) => {
    await probot.receive({
      id: id ?? `delivery-${process.pid}-${++deliveries}`,
      name,
      payload,
    } as Parameters<Probot["receive"]>[0]);
  };
  return {
    probot,
    processor,
    deps,
    receive,
    async deliver(name, payload, id) {
      await receive(name, payload, id);
      await processor.processPending();
    },
    async settle() {
      const deadline = Date.now() + 5000;
      for (;;) {
        await processor.processPending();
        if ((await countDeliveries(db.pool)).pending === 0) return;
        if (Date.now() > deadline) throw new Error("deliveries still pending after 5 s");
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}
