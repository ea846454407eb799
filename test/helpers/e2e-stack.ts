/**
 * The whole of Tether for end-to-end tests and benchmarks: the built app as a real process
 * (`node dist/src/main.js`), a real Postgres database, the real Claude CLI (the app's own
 * resolution finds the bundled binary) talking to a fake Messages API, and GitHub stood in for
 * by a local HTTP server reached through GHE_HOST/GHE_PROTOCOL.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Pool } from "../../src/db/pool.js";
import { freePort } from "../../src/db/embedded.js";
import { readProcTable } from "../../src/process/process-tree.js";
import {
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeAnthropicOptions,
} from "./fake-anthropic.js";
import { startFakeGitHub, type FakeGitHub, type FakeGitHubOptions } from "./fake-github.js";
import { startFakeOpenAI, type FakeOpenAI } from "./fake-openai.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { afterAll, beforeAll } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/**
 * Live descendants of `pid`, by host pid. A sandboxed CLI has its own pid namespace, so the pid
 * it sees for itself means nothing here: ask the host's process table instead.
 */
function descendantsOf(pid: number): number[] {
  const table = readProcTable();
  const found: number[] = [];
  let frontier = [pid];
  while (frontier.length) {
    const next = table
      .filter((p) => frontier.includes(p.ppid) && p.state !== "Z")
      .map((p) => p.pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}
export const REPO = "octo/widgets";
export const SECRET = "e2e-webhook-secret-0123456789";

export interface AppProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL, like a crash. */
  kill(): Promise<void>;
  /** Every live process the app started (the sandbox, the CLI, its tools), by host pid. */
  descendants(): number[];
}

export interface Stack {
  gh: FakeGitHub;
  api: FakeAnthropic;
  pool: Pool;
  home: string;
  workspaces: string;
  /** TETHER_DATA_DIR: the sandbox's run files, the session store (`sessions/`), a web process's dashboard token. */
  dataDir: string;
  app: AppProcess;
  /** Start the app again as `app` (on a free port, or on `env.PORT` when given). */
  startApp(env?: Record<string, string>): Promise<AppProcess>;
  /** Another process of the app (say, a runner-only one) beside `app`, stopped by close(). */
  spawnApp(env?: Record<string, string>): Promise<AppProcess>;
  /** The stack's temporary directory, removed by close(). */
  tmp: string;
  /** A comment by `user` on the issue, delivered to the app as GitHub would. Returns its id. */
  comment(issueNumber: number, body: string, user?: string): Promise<number>;
  /** Deliver a webhook event to the app as GitHub does; anything but 2xx throws. */
  deliver(ev: { name: string; payload: unknown }): Promise<void>;
  /** Edit a comment on GitHub and deliver issue_comment.edited, sent by `sender` (default its author). */
  editComment(issueNumber: number, commentId: number, body: string, sender?: string): Promise<void>;
  /** The task created from a comment, once it is finished (or the timeout hits). */
  finishedTask(commentId: number, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Comments on the issue that Tether wrote for a task (found by its marker). */
  taskComments(issueNumber: number, taskId: number): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface StackOptions {
  pool: Pool;
  databaseUrl: string;
  config?: string;
  env?: Record<string, string>;
  anthropic?: FakeAnthropicOptions;
  /** The app's working directory (where it looks for `.env`); default the repository. */
  cwd?: string;
  /** Files the stand-in repository starts with; default a README and src/split.js. */
  files?: Record<string, string>;
  /** Runs once GitHub's stand-in exists, before the app starts (to write its key to a file). */
  beforeApp?: (gh: FakeGitHub) => void | Promise<void>;
  /** Options for the app's node (say, `--cpu-prof`, which NODE_OPTIONS does not take). */
  nodeArgs?: string[];
  /** Options for GitHub's stand-in (say, `statelessTokens`). */
  github?: FakeGitHubOptions;
  /** The stand-in repository is private (its attachments need a token). */
  privateRepo?: boolean;
}

export async function startStack(opts: StackOptions): Promise<Stack> {
  const gh = await startFakeGitHub(opts.github);
  const api = await startFakeAnthropic(opts.anthropic);
  await gh.addRepo({
    owner: "octo",
    name: "widgets",
    ...(opts.privateRepo ? { private: true } : {}),
    files: opts.files ?? {
      "README.md": "# widgets\n",
      "src/split.js": "export const split = (s) => s.split('\\n');\n",
    },
  });
  if (opts.config) await gh.setConfig(REPO, opts.config);
  for (const user of ["alice", "bob", "carol"]) gh.setPermission(user, "write");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-e2e-"));
  const home = path.join(tmp, "home");
  const workspaces = path.join(tmp, "workspaces");
  const dataDir = path.join(tmp, "data");
  fs.mkdirSync(home, { recursive: true });
  const children: AppProcess[] = [];
  await opts.beforeApp?.(gh);

  const startApp = async (extra: Record<string, string> = {}): Promise<AppProcess> => {
    // A given PORT (an app started again at the address GitHub delivers to) is kept.
    const port = Number(extra.PORT ?? opts.env?.PORT) || (await freePort());
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      ...gh.appEnv(SECRET),
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: opts.databaseUrl,
      TETHER_DATA_DIR: dataDir, // never the checkout's .data
      TETHER_WORKSPACE_DIR: workspaces,
      TETHER_RUNTIME_ID: "rt-e2e",
      TETHER_ENV_FILE: "", // never a developer's .env
      TETHER_GITHUB_THROTTLE: "false",
      TETHER_RUNNER_CONCURRENCY: "2",
      TETHER_SHUTDOWN_TIMEOUT_MS: "4000",
      ANTHROPIC_BASE_URL: api.url,
      ANTHROPIC_API_KEY: "sk-ant-test-e2e-key-000000",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      LOG_LEVEL: "info",
      // The CLI under test: the pinned one, or the one an operator points at (npm run test:cli
      // covers the contract tests; the e2e files run the same way).
      ...(process.env.TETHER_CLAUDE_PATH
        ? { TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH }
        : {}),
      // Off unless a test is about it: the drills resend failed deliveries themselves, and a
      // sweep's requests would land among the ones tests count.
      TETHER_REDELIVER_MINUTES: "0",
      ...opts.env,
      ...extra,
    };
    const child = spawn(
      process.execPath,
      [...(opts.nodeArgs ?? []), path.join(ROOT, "dist/src/main.js")],
      {
        cwd: opts.cwd ?? ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout?.on("data", (d) => (out += d));
    child.stderr?.on("data", (d) => (out += d));
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`app exited early:\n${out}`);
      const ok = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`app did not become healthy:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const proc: AppProcess = {
      child,
      url,
      output: () => out,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
      },
      kill: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      },
      descendants: () => descendantsOf(child.pid!),
    };
    children.push(proc);
    return proc;
  };

  /** Deliver an event to the app as GitHub does (recorded in its log); anything but 2xx throws. */
  const deliverOk = async (ev: { name: string; payload: unknown }): Promise<void> => {
    const res = await gh.deliver(stack.app.url, ev.name, ev.payload, SECRET, { timeoutMs: 15_000 });
    if (res.status < 200 || res.status >= 300)
      throw new Error(`webhook answered ${res.status}: ${res.body}`);
  };
  const stack: Stack = {
    gh,
    api,
    pool: opts.pool,
    home,
    workspaces,
    dataDir,
    app: await startApp(),
    startApp: async (env) => (stack.app = await startApp(env)),
    spawnApp: startApp,
    tmp,
    deliver: deliverOk,
    async comment(issueNumber, body, user = "alice") {
      const c = gh.addComment({ repo: REPO, issueNumber, body, user });
      const ev = gh.webhooks.issueComment({ repo: REPO, issueNumber, commentId: c.id as number });
      await deliverOk(ev);
      return c.id as number;
    },
    async editComment(issueNumber, commentId, body, sender) {
      const before = (gh.commentJson(commentId) as { body: string }).body;
      gh.editComment(commentId, body);
      const ev = gh.webhooks.issueComment({
        repo: REPO,
        issueNumber,
        commentId,
        action: "edited",
        previousBody: before,
        ...(sender ? { sender } : {}),
      });
      await deliverOk(ev);
    },
    async finishedTask(commentId, timeoutMs = 90_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await opts.pool.query(
          `SELECT t.* FROM tasks t JOIN task_comments c ON c.task_id = t.id WHERE c.comment_id = $1`,
          [commentId],
        );
        const t = rows[0] as Record<string, unknown> | undefined;
        if (t && ["succeeded", "failed", "cancelled"].includes(t.status as string)) return t;
        if (Date.now() > deadline) {
          throw new Error(
            `task for comment ${commentId} not finished: ${JSON.stringify(t)}\n--- app output ---\n${stack.app.output().slice(-6000)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 150));
      }
    },
    taskComments(issueNumber, taskId) {
      return gh
        .comments(REPO, issueNumber)
        .filter((c) => String(c.body).includes(`<!-- tether:task:${taskId} -->`));
    },
    async close() {
      for (const c of children) await c.kill().catch(() => {});
      await api.close();
      await gh.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
  // GitHub sends a push after every commit; a failed delivery does not fail the push.
  gh.onPush = async (ev) => {
    await gh.deliver(stack.app.url, ev.name, ev.payload, SECRET, { timeoutMs: 15_000 });
  };
  return stack;
}

/** The OpenAI key the app holds when a file's stack has a fake Responses API (`fileStack`). */
export const OPENAI_KEY = "sk-e2e-openai-key-000000000000";

/**
 * The stack of one e2e file: its test database, and the stack started before the file's tests
 * and closed after them. With `openai`, a fake Responses API for the Codex agents too, the app
 * holding OPENAI_KEY for it. `stack` and `openai` stand for the started ones (they are only
 * usable from the tests and hooks on).
 */
export async function fileStack(
  opts: Omit<StackOptions, "pool" | "databaseUrl"> & { openai?: boolean } = {},
): Promise<{ db: TestDatabase; stack: Stack; openai: FakeOpenAI }> {
  const { openai: withOpenAI, ...rest } = opts;
  const db = await createTestDatabase();
  let stack: Stack | undefined;
  let openai: FakeOpenAI | undefined;
  beforeAll(async () => {
    if (withOpenAI) openai = await startFakeOpenAI();
    stack = await startStack({
      pool: db.pool,
      databaseUrl: db.url,
      ...rest,
      env: {
        ...(openai ? { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: openai.url } : {}),
        ...rest.env,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await openai?.close();
  });
  return {
    db,
    stack: started(() => stack, "the stack"),
    openai: started(() => openai, "the fake OpenAI API (fileStack's `openai` option)"),
  };
}

/** An object that passes every use on to `get()`'s, which exists once beforeAll has run. */
function started<T extends object>(get: () => T | undefined, what: string): T {
  const target = () => {
    const t = get();
    if (!t) throw new Error(`${what} is not started: use it from a test or hook`);
    return t;
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(target(), key),
    set: (_, key, value) => Reflect.set(target(), key, value),
    has: (_, key) => Reflect.has(target(), key),
  });
}
