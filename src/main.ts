#!/usr/bin/env node
import { CLI_SECRETS } from "./cli-registry.js";
import { Probot, run as runProbotSetup } from "probot";
import { serveTether, tetherApp } from "./app.js";
import type { AppDeps } from "./deps.js";
import { openDatabase } from "./db/database.js";
import { applyEnvFile, EnvError, loadEnv, type Env } from "./env.js";
import { appOctokit, githubApiUrl, readPrivateKey } from "./github/app-auth.js";
import { HeadroomSync } from "./github/headroom-sync.js";
import { postgresAnswers } from "./github/conditional-requests.js";
import { githubDeliveryLog } from "./github/webhook-deliveries.js";
import { InboxPruner } from "./intake/inbox-pruner.js";
import { fileClock, Scheduler } from "./intake/scheduler.js";
import { setMcpServerNames, setScheduleMinMinutes } from "./config/repo-config.js";
import { mcpSecrets } from "./config/mcp-servers.js";
import { PeriodicJob } from "./intake/periodic-job.js";
import { appBotLogin } from "./github/app-login.js";
import { IntakeProcessor } from "./intake/processor.js";
import { RedeliverySweeper } from "./intake/redelivery-sweeper.js";
import { createLogger, type Logger } from "./log.js";
import { processMetrics } from "./metrics.js";
import { nextTurnStatus, startRunner } from "./runner/wiring/start-runner.js";
import { TRANSCRIPT_COMMAND, transcriptCommand } from "./sessions/transcript-command.js";
import { secretsInEnv } from "./core/secret-env.js";
import { Shutdown } from "./shutdown.js";
import { healthRoutes } from "./web/health.js";
import { ensureDashboardToken } from "./web/dashboard-token.js";
import { serveHandlers } from "./web/http.js";
import { metricsRoute } from "./web/metrics-route.js";
import { startWebhookProxy } from "./web/webhook-proxy.js";
import { WEBHOOK_PATH } from "./web/webhook-route.js";

type Role = Env["TETHER_ROLE"];
/** Set once start-up has something to undo (the embedded database above all). */
let activeShutdown: Shutdown | undefined;
const ROLES: readonly Role[] = ["all", "web", "runner", "migrate"];

async function main(): Promise<void> {
  applyEnvFile(process.env);
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
  if (arg !== undefined && arg !== TRANSCRIPT_COMMAND && !ROLES.includes(arg as Role)) {
    console.error(
      `tether: unknown role "${arg}"; use one of: ${ROLES.join(", ")} (or: ${TRANSCRIPT_COMMAND} <session-id-prefix>)`,
    );
    process.exit(2);
  }
  const role: Role = (arg as Role | undefined) ?? env.TETHER_ROLE;
  // Every log line is scrubbed of these (and of token-shaped strings), whatever logged it; the
  // runner scrubs its comments of the same (core/secret-env.ts is the one list).
  const secrets = new Set<string>(secretsInEnv(process.env, CLI_SECRETS));
  for (const s of mcpSecrets(env.mcpServers)) secrets.add(s);
  const privateKey = await readPrivateKey(env).catch(() => undefined);
  if (privateKey) secrets.add(privateKey);
  if (arg === TRANSCRIPT_COMMAND) {
    // stdout is the transcript's: the log goes to stderr, warnings and worse only.
    const level = env.LOG_LEVEL === "info" ? "warn" : env.LOG_LEVEL;
    const log = createLogger(level, process.stderr, { secrets });
    process.exitCode = await transcriptCommand(process.argv.slice(3), env, log);
    return;
  }
  const log = createLogger(env.LOG_LEVEL, undefined, { secrets });
  // Every reading of .github/tether.yml, a comment's and the scheduler's, refuses the same schedules.
  setScheduleMinMinutes(env.TETHER_SCHEDULE_MIN_MINUTES);
  // …and agents' MCP servers the operator has not configured.
  setMcpServerNames(Object.keys(env.mcpServers));
  const shutdown = new Shutdown(log, env.TETHER_SHUTDOWN_TIMEOUT_MS);
  activeShutdown = shutdown;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      void shutdown.run(signal).finally(() => process.exit(0));
    });
  }

  const db = await openDatabase(env, log);
  if (db.embedded) secrets.add(db.embedded.password);
  shutdown.add(40, "database", () => db.close());
  if (role === "migrate") {
    await shutdown.run("migrations done");
    return;
  }

  const metrics = processMetrics().useDatabase(db.pool);
  const deps: AppDeps = { env, log, pool: db.pool, describeStatus: nextTurnStatus(db.pool) };
  if ((role === "all" || role === "web") && env.TETHER_DASHBOARD_TOKEN === undefined) {
    // The dashboard always needs a token; without one set, make one the operator can read.
    const made = await ensureDashboardToken(env.dataDir);
    secrets.add(made.token);
    deps.dashboardToken = made.token;
    // One line that says where the token is, never what it is.
    if (made.state === "tightened") {
      log.warn(
        { file: made.file },
        "dashboard token read from this file, which others could read: its mode is now 0600; delete it and restart for a new token",
      );
    } else {
      log.info(
        { file: made.file },
        made.state === "created"
          ? "dashboard token made: sign in to /dashboard with the token in this file (or set TETHER_DASHBOARD_TOKEN)"
          : "dashboard token read from this file (or set TETHER_DASHBOARD_TOKEN)",
      );
    }
  }

  if (role === "all" || role === "runner") {
    const runner = await startRunner({ env, log, pool: db.pool, metrics, secrets });
    if (runner) {
      deps.runnerAlive = () => runner.alive;
      deps.runnerSandbox = () => runner.sandbox;
      // Phase 20: after intake and HTTP stop, before connections close. Most of the budget
      // goes to letting running turns finish.
      shutdown.add(20, "runner", () => runner.stop(env.TETHER_SHUTDOWN_TIMEOUT_MS * 0.6));
    }
  }

  if (role === "all" || role === "web") {
    const { stop, probot } = await startWeb(env, log, deps);
    shutdown.add(10, "http", stop);
    if (probot) {
      // Takes deliveries from the inbox the webhook handler fills (src/intake/processor.ts).
      const intake = new IntakeProcessor({
        pool: db.pool,
        log: log.child({ component: "intake" }),
        auth: (installationId) => probot.auth(installationId),
        appId: env.APP_ID,
        appLogin: async () => appBotLogin(await probot.auth()),
        describeStatus: deps.describeStatus,
        concurrency: env.TETHER_INTAKE_CONCURRENCY,
      });
      await intake.start();
      shutdown.add(10, "intake", () => intake.stop());
      const pruner = new InboxPruner({
        pool: db.pool,
        log: log.child({ component: "inbox-pruner" }),
        pruned: (n) => metrics.recordDeliveriesPruned(n),
      });
      pruner.start();
      shutdown.add(10, "inbox pruner", () => pruner.stop());
      // Standing conversations: each schedule tick one turn, whatever the number of processes.
      const scheduler = new Scheduler({
        pool: db.pool,
        log: log.child({ component: "scheduler" }),
        auth: (installationId) => probot.auth(installationId),
        appAuth: () => probot.auth(),
        intervalMs: env.TETHER_SCHEDULE_CHECK_MS,
        firstDelayMs: Math.min(env.TETHER_SCHEDULE_CHECK_MS, 5000),
        ...(env.TETHER_SCHEDULE_CLOCK_FILE
          ? { now: fileClock(env.TETHER_SCHEDULE_CLOCK_FILE) }
          : {}),
        ticked: (result) => metrics.recordScheduleTick(result),
      });
      scheduler.start();
      shutdown.add(10, "scheduler", () => scheduler.stop());
      if (role === "web") {
        // What intake's responses said of each installation's rate limit, for the runners'
        // claims (#34); a runner in this process writes it before each claim itself.
        const headroom = new HeadroomSync(db.pool);
        const sync = new PeriodicJob(
          () => headroom.flush().catch((err) => log.warn({ err }, "could not store headroom")),
          2000,
        );
        sync.start(2000);
        shutdown.add(10, "headroom sync", () => sync.stop());
      }
      if (env.TETHER_REDELIVER_MINUTES > 0) {
        // GitHub never redelivers a delivery the endpoint failed to take; this asks it to.
        const redeliver = new RedeliverySweeper({
          pool: db.pool,
          log: log.child({ component: "redeliver" }),
          github: async () => githubDeliveryLog(await probot.auth()),
          redelivered: (result) => metrics.recordRedelivery(result),
          intervalMs: env.TETHER_REDELIVER_MINUTES * 60_000,
          firstDelayMs: env.TETHER_REDELIVER_FIRST_DELAY_MS,
          settleMs: env.TETHER_REDELIVER_SETTLE_MS,
        });
        redeliver.start();
        shutdown.add(10, "redelivery sweeper", () => redeliver.stop());
      }
    }
  } else if (role === "runner") {
    // A runner-only process still answers health checks and scrapes.
    const http = await serveHandlers([healthRoutes(deps), metricsRoute(deps, metrics)], {
      host: env.HOST,
      port: env.PORT,
    });
    shutdown.add(10, "http", () => http.close());
    log.info({ url: http.url }, "runner health and metrics");
  }
  log.info({ role }, "tether started");
}

async function startWeb(
  env: Env,
  log: Logger,
  deps: AppDeps,
): Promise<{ stop(): Promise<void>; probot?: Probot }> {
  const privateKey = await readPrivateKey(env);
  if (env.APP_ID === undefined || !privateKey) {
    // No app yet: serve Probot's registration flow (http://localhost:PORT/), which creates a
    // GitHub App from app.yml and writes its credentials to .env. Restart afterwards.
    log.warn(
      "APP_ID is not set: serving the GitHub App setup page; restart after registering the app",
    );
    const setup = await runProbotSetup(tetherApp(deps), { env: process.env });
    return { stop: () => setup.stop() };
  }
  // Probot authenticates as the app and its installations; Tether serves HTTP itself.
  const probot = new Probot({
    appId: env.APP_ID,
    privateKey,
    secret: env.WEBHOOK_SECRET,
    baseUrl: githubApiUrl(env),
    log: log.child({ component: "probot" }),
    // Intake's reads (the config, the asker's permission) are asked conditionally.
    Octokit: appOctokit(env, { answers: postgresAnswers(deps.pool) }),
  });
  const http = await serveTether(deps, probot, { host: env.HOST ?? "localhost", port: env.PORT });
  log.info({ url: http.url }, "listening");
  const proxy = env.WEBHOOK_PROXY_URL
    ? await startWebhookProxy({
        source: env.WEBHOOK_PROXY_URL,
        target: `${http.url}${WEBHOOK_PATH}`,
        log: log.child({ component: "webhook-proxy" }),
      })
    : undefined;
  return {
    probot,
    stop: async () => {
      await proxy?.stop();
      await http.close();
    },
  };
}

main().catch(async (err: unknown) => {
  console.error(`tether: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  await activeShutdown?.run("start-up failed");
  process.exit(1);
});
