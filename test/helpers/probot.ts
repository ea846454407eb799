import { generateKeyPairSync } from "node:crypto";
import nock from "nock";
import { Probot, ProbotOctokit } from "probot";
import { afterEach, beforeEach, expect } from "vitest";
import { tetherApp } from "../../src/app.js";
import type { AppDeps } from "../../src/deps.js";
import { loadEnv } from "../../src/env.js";
import { IntakeProcessor, type IntakeProcessorOptions } from "../../src/intake/processor.js";
import type { DescribeStatus } from "../../src/intake/status.js";
import { countDeliveries } from "../../src/sql/deliveries.js";
import { createLogger } from "../../src/log.js";
import type { TestDatabase } from "./db.js";

export const APP_ID = 4242;
export const WEBHOOK_SECRET = "test-webhook-secret";
export const API = "https://api.github.com";

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

/**
 * nock for every test of the file: no real network, and after each test, fail on a request no
 * interceptor matched and on an interceptor no request used.
 */
export function useNock(): void {
  const unmatched: string[] = [];
  const onNoMatch = (req: {
    method?: string;
    url?: string;
    href?: string;
    path?: string;
    options?: { method?: string; href?: string; path?: string };
  }) => {
    const method = req.method ?? req.options?.method ?? "?";
    const where = req.url ?? req.href ?? req.path ?? req.options?.href ?? req.options?.path;
    unmatched.push(`${method} ${where ?? JSON.stringify(req).slice(0, 200)}`);
  };
  beforeEach(() => {
    nock.disableNetConnect();
    nock.emitter.on("no match", onNoMatch);
  });
  afterEach(() => {
    nock.emitter.removeListener("no match", onNoMatch);
    const pending = nock.pendingMocks();
    const missing = unmatched.splice(0);
    nock.cleanAll();
    expect(missing, "requests no interceptor matched").toEqual([]);
    expect(pending, "interceptors no request used").toEqual([]);
  });
}

/** Interceptors for the GitHub API calls intake makes. Each is expected exactly once. */
export function github(owner = "Codertocat", repo = "Hello-World") {
  const api = nock(API);
  const base = `/repos/${owner}/${repo}`;
  const configPath = `/contents/.github%2Ftether.yml`;
  return {
    api,
    token(installationId = 1) {
      api
        .post(`/app/installations/${installationId}/access_tokens`)
        .reply(201, { token: "ghs_test", expires_at: "2099-01-01T00:00:00Z", permissions: {} });
      return this;
    },
    /** No `.github/tether.yml` in the repository nor in the org's `.github` repository. */
    noConfig() {
      api.get(`${base}${configPath}`).reply(404, { message: "Not Found" });
      api.get(`/repos/${owner}/.github${configPath}`).reply(404, { message: "Not Found" });
      return this;
    },
    config(yaml: string, where = base) {
      api
        .get(`${where}${configPath}`)
        .reply(200, yaml, { "content-type": "text/plain; charset=utf-8" });
      return this;
    },
    permission(username: string, roleName: string, permission = roleName) {
      api
        .get(`${base}/collaborators/${username}/permission`)
        .reply(200, { permission, role_name: roleName, user: { login: username } });
      return this;
    },
    reactToComment(commentId: number) {
      api
        .post(`${base}/issues/comments/${commentId}/reactions`, { content: "eyes" })
        .reply(201, { id: 1, content: "eyes" });
      return this;
    },
    reactToIssue(issueNumber: number) {
      api
        .post(`${base}/issues/${issueNumber}/reactions`, { content: "eyes" })
        .reply(201, { id: 1, content: "eyes" });
      return this;
    },
    /** A reply on the issue; its body lands in `bodies` for the test to check. */
    reply(issueNumber: number) {
      const bodies: string[] = [];
      api
        .post(`${base}/issues/${issueNumber}/comments`, (b: { body: string }) => {
          bodies.push(b.body);
          return true;
        })
        .reply(201, { id: 9001 });
      return { bodies };
    },
  };
}
