/**
 * Builds a runner from the environment: the registered agent CLIs, the runtime id, GitHub through the
 * app's installations, the workspaces, and the repo config loader. Used by main.ts.
 */
import os from "node:os";
import path from "node:path";
import { Probot } from "probot";
import type { CliAdapter } from "../../agent-cli/runtime-adapter.js";
import { AGENT_CLIS, CLI_SECRETS, cliOf, DEFAULT_CLI } from "../../cli-registry.js";
import { loadRepoConfig } from "../../config/load-repo-config.js";
import { formatConfigProblems } from "../../config/repo-config.js";
import type { Pool } from "../../db/pool.js";
import type { Env } from "../../env.js";
import { HeadroomSync } from "../../github/headroom-sync.js";
import { appOctokit, githubApiUrl, readPrivateKey } from "../../github/app-auth.js";
import { RequestCounter } from "../../github/request-count.js";
import { cloneUrlFor } from "../../github/git-auth.js";
import { postgresAnswers } from "../../github/conditional-requests.js";
import {
  FETCH_PERMISSIONS,
  pushPermissions,
  scopedOctokit,
  scopedToken,
  THREAD_PERMISSIONS,
} from "../../github/scoped-auth.js";
import type { Logger } from "../../log.js";
import type { Metrics } from "../../metrics.js";
import { toRepoSettings } from "../../config/repo-settings.js";
import { agentForClis } from "./agent-clis.js";
import { cliAgent } from "./cli-agent.js";
import { githubThread } from "./github-thread.js";
import type { ConfigResult } from "../ports.js";
import { Sandbox } from "../../sandbox/sandbox.js";
import {
  postgresTranscripts,
  type PostgresTranscriptsOptions,
} from "../../sessions/postgres-transcripts.js";
import { publisher } from "../../publish/publisher.js";
import { Runner } from "../loop/runner.js";
import { collectIdle } from "../../workspace/collect-idle.js";
import { deriveRuntimeId } from "./runtime-id.js";
import { secretsInEnv } from "../../core/secret-env.js";
import { Workspaces } from "../../workspace/workspace.js";
import { workspacePort } from "./workspace-port.js";
import { liveLinkKey } from "../../sql/turn-events.js";
import { postgresTurnHistory, postgresTurnStore } from "../../sql/turn-store.js";
import { describeNextTurn } from "../render/describe-next-turn.js";
import type { DescribeStatus } from "../../intake/status.js";

/** `/status` with what the next turn would do, read from the turns' history in `pool`. */
export function nextTurnStatus(pool: Pool): DescribeStatus {
  return describeNextTurn(postgresTurnHistory(pool));
}

export async function startRunner(opts: {
  env: Env;
  log: Logger;
  pool: Pool;
  metrics?: Metrics;
  /**
   * Secrets the process came to hold beyond its environment (the embedded database's password,
   * a dashboard token it made), read at each use: the log scrubber's set.
   */
  secrets?: Iterable<string>;
}): Promise<Runner | null> {
  const { env, log, pool } = opts;
  const privateKey = await readPrivateKey(env);
  if (env.APP_ID === undefined || !privateKey) {
    log.warn("the runner needs APP_ID and PRIVATE_KEY (register the app first); not starting it");
    return null;
  }
  // Every registered CLI (src/cli-registry.ts). The default CLI is probed now: its binary and
  // store make the runtime id. The others when their entry says so, else on their first turn.
  const defaultCli = cliOf(DEFAULT_CLI);
  const versions: Record<string, string | null> = {};
  const adapters = AGENT_CLIS.map((entry) => {
    const made = entry.create({ env: process.env, log });
    const adapter: CliAdapter = {
      ...made,
      // What the claim query compares a stored session's CLI version with, once known.
      probe: () =>
        made.probe().then((c) => {
          if (c.version) versions[entry.name] = c.version;
          return c;
        }),
    };
    return { entry, adapter };
  });
  const probes = new Map<string, Awaited<ReturnType<CliAdapter["probe"]>>>();
  for (const { entry, adapter } of adapters) {
    if (entry !== defaultCli && !entry.probeAtStart) continue;
    const caps = await adapter.probe();
    probes.set(entry.name, caps);
    if (caps.error)
      log.error(
        { cli: entry.name, path: caps.path, error: caps.error },
        `the ${entry.label} did not answer --version/--help; runs will fail until it does`,
      );
  }
  const caps = probes.get(defaultCli.name)!;
  const sandbox = await Sandbox.start({
    mode: env.TETHER_SANDBOX,
    stateDir: path.join(env.dataDir, "sandbox"),
    log: log.child({ component: "sandbox" }),
    ...(env.TETHER_SANDBOX_BIND ? { extraBinds: env.TETHER_SANDBOX_BIND } : {}),
    ...(env.TETHER_PROXY_SERVER_TOOLS ? { serverTools: env.TETHER_PROXY_SERVER_TOOLS } : {}),
  });
  const home = os.homedir();
  const runtimeId = deriveRuntimeId({
    configured: env.TETHER_RUNTIME_ID,
    home,
    homeStore: defaultCli.homeStore,
    cliPath: caps.path,
  });
  // The turn's reads of the issue, branches and users are asked conditionally.
  const Octokit = appOctokit(env, { answers: postgresAnswers(pool) });
  const probot = new Probot({
    appId: env.APP_ID,
    privateKey,
    baseUrl: githubApiUrl(env),
    log: log.child({ component: "github" }),
    Octokit,
  });
  const workspaces = await Workspaces.open({
    root: env.workspaceDir,
    sandbox,
    log: log.child({ component: "workspace" }),
    gitHome: path.join(env.dataDir, "git-home"),
  });
  const workspace = workspacePort(workspaces);
  // Each CLI's sessions are contained alike: the same sandbox and homes, and the same store, so
  // any runner whose CLI reads them resumes the session. What differs is the CLI's version and
  // where it files a session (its registry entry's layout).
  const contain = (cliSessions: Pick<PostgresTranscriptsOptions, "cliVersion" | "layout">) => ({
    sandbox,
    transcripts: postgresTranscripts({
      pool,
      cacheRoot: path.join(env.dataDir, "sessions"),
      log: log.child({ component: "sessions" }),
      maxBytes: env.TETHER_SESSION_MAX_BYTES,
      ...cliSessions,
    }),
    homes: path.join(env.dataDir, "sandbox", "homes"),
  });
  const webUrl = env.GHE_HOST ? `${env.GHE_PROTOCOL}://${env.GHE_HOST}` : "https://github.com";
  let app: Awaited<ReturnType<Probot["auth"]>> | undefined;
  const runner = new Runner({
    pool,
    store: postgresTurnStore,
    log: log.child({ component: "runner" }),
    runtimeId,
    concurrency: env.TETHER_RUNNER_CONCURRENCY,
    runtime: {
      homeDir: home,
      cliPath: caps.path,
      cliVersion: caps.version,
      canResume: caps.canResume,
      cliVersions: () => ({ ...versions }),
    },
    agent: agentForClis(
      Object.fromEntries(
        adapters.map(({ entry, adapter }) => [
          entry.name,
          cliAgent(adapter, {
            log,
            abilities: entry,
            mcpServers: env.mcpServers,
            contain: contain({
              cliVersion: probes.has(entry.name)
                ? (probes.get(entry.name)!.version ?? null)
                : () => adapter.probe().then((c) => c.version),
              layout: entry.layout,
            }),
          }),
        ]),
      ),
    ),
    sandbox: () => sandbox.status,
    // Near an installation's rate limit its turns wait for the reset (#34).
    rateLimitReserve: env.TETHER_RATE_LIMIT_RESERVE,
    headroom: new HeadroomSync(pool),
    workspace,
    publish: publisher({ workspaces, pool, log: log.child({ component: "publish" }) }),
    github: async (task) => {
      // Every token of a turn is scoped to the task's repository and the step's least
      // permissions (src/github/scoped-auth.ts), not the installation's all.
      app ??= await probot.auth();
      const appClient = app;
      const scope = {
        installationId: task.installationId,
        repo: task.repo,
        repoId: task.repoId,
      };
      // The turn's requests are counted (src/github/request-count.ts) and stored on its task.
      const counter = new RequestCounter(task.installationId);
      const octokit = scopedOctokit(
        appClient,
        Octokit,
        { ...scope, permissions: THREAD_PERMISSIONS },
        {
          baseUrl: githubApiUrl(env),
          log: log.child({ component: "github" }),
          githubRequests: counter,
        },
      );
      return githubThread({
        octokit,
        counter,
        gitToken: () => scopedToken(appClient, { ...scope, permissions: FETCH_PERMISSIONS }),
        repo: task.repo,
        cloneUrl: cloneUrlFor(env, task.repo),
        loadConfig: async (o, owner, repo): Promise<ConfigResult> => {
          const loaded = await loadRepoConfig(o, { owner, repo }, { clis: AGENT_CLIS });
          return loaded.ok
            ? { ok: true, settings: toRepoSettings(loaded.config) }
            : { ok: false, message: formatConfigProblems(loaded.problems) };
        },
        publishing: {
          app: () => probot.auth(),
          installationId: task.installationId,
          repoId: task.repoId,
          webUrl,
          writeClient: ({ workflows }) =>
            scopedOctokit(
              appClient,
              Octokit,
              { ...scope, permissions: pushPermissions(workflows) },
              {
                baseUrl: githubApiUrl(env),
                log: log.child({ component: "github" }),
                githubRequests: counter,
              },
            ),
        },
      });
    },
    secrets: () => [privateKey, ...secretsInEnv(process.env, CLI_SECRETS), ...(opts.secrets ?? [])],
    answerRetry: { baseMs: env.TETHER_ANSWER_RETRY_MS },
    ...(env.TETHER_PUBLIC_URL ? { publicUrl: env.TETHER_PUBLIC_URL } : {}),
    // Attachments come from GitHub's own host only (its web origin, where the clone URL is).
    images: { githubOrigin: webUrl, root: path.join(env.dataDir, "images") },
    ...(env.TETHER_LIVE !== "off"
      ? {
          live: {
            mode: env.TETHER_LIVE,
            linkDays: env.TETHER_LIVE_LINK_DAYS,
            editIntervalMs: env.TETHER_PROGRESS_EDIT_SECONDS * 1000,
            key: memo(() => liveLinkKey(pool)),
          },
        }
      : {}),
    // Pending answers are looked for every 5 s, or at their first retry if that comes sooner.
    answerPollMs: Math.min(5000, env.TETHER_ANSWER_RETRY_MS),
    ...(env.TETHER_COLLECT_IDLE_HOURS > 0
      ? {
          collect: {
            everyMs: 3600_000,
            run: async (busy: string[]) => {
              const c = await collectIdle({
                workspaceRoot: env.workspaceDir,
                cacheRoot: path.join(env.dataDir, "sessions"),
                idleMs: env.TETHER_COLLECT_IDLE_HOURS * 3600_000,
                debugKeepMs: env.TETHER_DEBUG_KEEP_HOURS * 3600_000,
                busy: () => busy,
                now: () => new Date(),
                log: log.child({ component: "collect" }),
                pool,
              });
              opts.metrics?.recordCollected(c);
            },
          },
        }
      : {}),
    onFinished: (t) =>
      opts.metrics?.recordTurn({
        outcome: t.outcome,
        reason: t.reason,
        cli: t.cli,
        trigger: t.task.trigger,
        durationMs: t.durationMs,
        queueWaitMs: t.queueWaitMs,
        usage: t.usage,
        mcpToolCalls: t.mcpToolCalls ?? null,
        publish: t.publish && {
          result: t.publish.result,
          reason: "reason" in t.publish ? t.publish.reason : null,
          commits: t.publish.result === "published" ? t.publish.commits : 0,
          pullOpened: t.publish.result === "published" && (t.publish.pull?.opened ?? false),
        },
      }),
    onRefused: (t) => opts.metrics?.recordRefused(t.limits),
  });
  log.info(
    { runtimeId, cli: caps.path, version: caps.version, canResume: caps.canResume },
    "runtime",
  );
  await runner.start();
  return runner;
}

/** `f`'s first successful answer, kept; a failure is tried again at the next call. */
function memo<T>(f: () => Promise<T>): () => Promise<T> {
  let kept: Promise<T> | undefined;
  return () => {
    kept ??= f().catch((err: unknown) => {
      kept = undefined;
      throw err;
    });
    return kept;
  };
}
