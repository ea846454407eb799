#!/usr/bin/env node
import { readFile } from "node:fs/promises";
import { Probot, Server, run as runProbotSetup } from "probot";
import { tetherApp } from "./app.js";
import type { AppDeps } from "./deps.js";
import { openDatabase } from "./db/database.js";
import { EnvError, loadEnv, type Env } from "./env.js";
import { IntakeProcessor } from "./intake/processor.js";
import { createLogger, type Logger } from "./log.js";
import { Shutdown } from "./shutdown.js";

type Role = Env["TETHER_ROLE"];
/** Set once start-up has something to undo (the embedded database above all). */
let activeShutdown: Shutdown | undefined;
const ROLES: readonly Role[] = ["all", "web", "runner", "migrate"];

async function main(): Promise<void> {
  let env: Env;
  try {
    env = loadEnv();
  } catch (err) {
    if (err instanceof EnvError) {
      console.error(`tether: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const arg = process.argv[2];
  if (arg !== undefined && !ROLES.includes(arg as Role)) {
    console.error(`tether: unknown role "${arg}"; use one of: ${ROLES.join(", ")}`);
    process.exit(2);
  }
  const role: Role = (arg as Role | undefined) ?? env.TETHER_ROLE;
  const log = createLogger(env.LOG_LEVEL);
  const shutdown = new Shutdown(log, env.TETHER_SHUTDOWN_TIMEOUT_MS);
  activeShutdown = shutdown;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      void shutdown.run(signal).finally(() => process.exit(0));
    });
  }

  const db = await openDatabase(env, log);
  shutdown.add(40, "database", () => db.close());
  if (role === "migrate") {
    await shutdown.run("migrations done");
    return;
  }

  const deps: AppDeps = { env, log, pool: db.pool };
  if (role === "all" || role === "web") {
    const { server, probot } = await startWeb(env, log, deps);
    shutdown.add(10, "http", () => server.stop());
    if (probot) {
      // Takes deliveries from the inbox the webhook handler fills (src/intake/processor.ts).
      const intake = new IntakeProcessor({
        pool: db.pool,
        log: log.child({ component: "intake" }),
        auth: (installationId) => probot.auth(installationId),
        appId: env.APP_ID,
        describeStatus: deps.describeStatus,
        concurrency: env.TETHER_INTAKE_CONCURRENCY,
      });
      await intake.start();
      shutdown.add(10, "intake", () => intake.stop());
    }
  }
  log.info({ role }, "tether started");
}

async function startWeb(
  env: Env,
  log: Logger,
  deps: AppDeps,
): Promise<{ server: Server; probot?: Probot }> {
  const privateKey = await readPrivateKey(env);
  if (env.APP_ID === undefined || !privateKey) {
    // No app yet: serve Probot's registration flow (http://localhost:PORT/), which creates a
    // GitHub App from app.yml and writes its credentials to .env. Restart afterwards.
    log.warn(
      "APP_ID is not set: serving the GitHub App setup page; restart after registering the app",
    );
    return { server: await runProbotSetup(tetherApp(deps), { env: process.env }) };
  }
  const baseUrl = env.GHE_HOST
    ? `${env.GHE_PROTOCOL}://${env.GHE_HOST}/api/v3`
    : "https://api.github.com";
  const server = new Server({
    host: env.HOST,
    port: env.PORT,
    webhookProxy: env.WEBHOOK_PROXY_URL,
    log: log.child({ component: "probot" }),
    Probot: Probot.defaults({
      appId: env.APP_ID,
      privateKey,
      secret: env.WEBHOOK_SECRET,
      baseUrl,
      log: log.child({ component: "probot" }),
    }),
  });
  await server.load(tetherApp(deps));
  // The Server keeps its Probot to itself; the intake processor needs it for app.auth().
  let probot: Probot | undefined;
  await server.load((app) => {
    probot = app;
  });
  await server.start();
  return { server, probot };
}

async function readPrivateKey(env: Env): Promise<string | undefined> {
  if (env.PRIVATE_KEY) return env.PRIVATE_KEY.replace(/\\n/g, "\n");
  if (env.PRIVATE_KEY_PATH) return readFile(env.PRIVATE_KEY_PATH, "utf8");
  return undefined;
}

main().catch(async (err: unknown) => {
  console.error(`tether: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  await activeShutdown?.run("start-up failed");
  process.exit(1);
});
