/**
 * A name reused (#38, "names reused"): what Tether keeps by a repository's name, GitHub's cached
 * answers and repo_facts, belongs to the repository that had the name then. A repository new
 * under an old name (the old one deleted, or another renamed into its place) is not served the
 * old one's pinned `.github/tether.yml` (its access rules, agents, schedules) for the hour a pin
 * lasts, nor believed to refuse drafts. The app's real clients against the GitHub stand-in, the
 * deliveries through the real webhook handler, the answers in a real Postgres.
 */
import { AGENT_CLIS } from "../../src/cli-registry.js";
import { pino } from "pino";
import { Probot } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRepoConfig, type ConfigOctokit } from "../../src/config/load-repo-config.js";
import { appOctokit } from "../../src/github/app-auth.js";
import { postgresAnswers } from "../../src/github/conditional-requests.js";
import { takeDelivery } from "../../src/intake/webhook.js";
import { createLogger } from "../../src/log.js";
import { draftsRefused, recordDraftsRefused } from "../../src/sql/repo-facts.js";
import { noteRepoName } from "../../src/sql/repo-names.js";
import { createTestDatabase } from "../helpers/db.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";

const db = await createTestDatabase();
let gh: FakeGitHub;
let probot: Probot;

beforeAll(async () => {
  gh = await startFakeGitHub();
  probot = new Probot({
    appId: gh.appId,
    privateKey: gh.privateKeyPem,
    baseUrl: gh.apiUrl,
    log: pino({ level: "silent" }),
    Octokit: appOctokit({ TETHER_GITHUB_THROTTLE: false }, { answers: postgresAnswers(db.pool) }),
  });
});
afterAll(async () => {
  await gh?.close();
});

const yaml = (model: string) => `agents:\n  tether:\n    model: ${model}\n`;
const deliver = takeDelivery({ pool: db.pool, log: createLogger("silent") });

/** The agent's model as the intake's client (the installation's token) reads the config. */
async function modelOf(repo: string): Promise<string | null> {
  const [owner, name] = repo.split("/") as [string, string];
  const intake = (await probot.auth(gh.installationId)) as unknown as ConfigOctokit;
  const loaded = await loadRepoConfig(intake, { owner, repo: name }, { clis: AGENT_CLIS });
  if (!loaded.ok) throw new Error(`config problems: ${JSON.stringify(loaded.problems)}`);
  return loaded.config.agents.tether?.model ?? null;
}

const configReads = (repo: string) =>
  gh.requests.filter(
    (r) => r.method === "GET" && r.path.startsWith(`/api/v3/repos/${repo}/contents/.github`),
  ).length;

/** A `@tether` comment on a new issue of `repo`, delivered to the webhook handler. */
async function comment(repo: string) {
  const issue = gh.addIssue({ repo, title: "help" });
  const c = gh.addComment({ repo, issueNumber: issue.number as number, body: "@tether hello" });
  const event = gh.webhooks.issueComment({
    repo,
    issueNumber: issue.number as number,
    commentId: c.id as number,
  });
  const taken = await deliver({ id: event.id, name: event.name, payload: event.payload });
  expect(taken.taken).toBe(true);
}

/** The repository's config read once after a push: pinned, served without asking again. */
async function pinned(repo: string, model: string) {
  const push = gh.webhooks.push({
    repo,
    ref: "refs/heads/main",
    before: "1".repeat(40),
    after: "2".repeat(40),
  });
  await deliver({ id: push.id, name: push.name, payload: push.payload });
  expect(await modelOf(repo)).toBe(model);
  const reads = configReads(repo);
  expect(await modelOf(repo)).toBe(model);
  expect(configReads(repo)).toBe(reads);
}

describe("a repository name taken by another repository", () => {
  it("a repository made under a deleted one's name is not served its pinned config", async () => {
    const repo = "reuse/widgets";
    const old = await gh.addRepo({
      owner: "reuse",
      name: "widgets",
      files: { ".github/tether.yml": yaml("claude-opus-4-1") },
    });
    await comment(repo);
    await pinned(repo, "claude-opus-4-1");
    await recordDraftsRefused(db.pool, repo);

    await gh.deleteRepo(repo);
    const fresh = await gh.addRepo({
      owner: "reuse",
      name: "widgets",
      files: { ".github/tether.yml": yaml("claude-sonnet-4-5") },
    });
    expect(fresh.id).not.toBe(old.id);
    // Its first delivery, before anything reads its config.
    await comment(repo);

    const reads = configReads(repo);
    expect(await modelOf(repo)).toBe("claude-sonnet-4-5");
    expect(configReads(repo)).toBeGreaterThan(reads);
    expect(await draftsRefused(db.pool, repo)).toBe(false);
  });

  it("a repository renamed into the name is not served the earlier holder's pinned config", async () => {
    await gh.addRepo({
      owner: "swap",
      name: "widgets",
      files: { ".github/tether.yml": yaml("claude-opus-4-1") },
    });
    await comment("swap/widgets");
    await pinned("swap/widgets", "claude-opus-4-1");

    await gh.deleteRepo("swap/widgets");
    await gh.addRepo({
      owner: "swap",
      name: "gadgets",
      files: { ".github/tether.yml": yaml("claude-haiku-4-5") },
    });
    gh.renameRepo("swap/gadgets", "swap/widgets");
    await comment("swap/widgets");
    expect(await modelOf("swap/widgets")).toBe("claude-haiku-4-5");
  });

  it("deliveries from the same repository keep its pinned answer and its facts", async () => {
    const repo = "keep/widgets";
    await gh.addRepo({
      owner: "keep",
      name: "widgets",
      files: { ".github/tether.yml": yaml("claude-opus-4-1") },
    });
    await comment(repo);
    await pinned(repo, "claude-opus-4-1");
    await recordDraftsRefused(db.pool, repo);
    const reads = configReads(repo);
    await comment(repo);
    expect(await modelOf(repo)).toBe("claude-opus-4-1");
    expect(configReads(repo)).toBe(reads);
    expect(await draftsRefused(db.pool, repo)).toBe(true);
  });

  it("a name seen for the first time drops answers kept before names were recorded", async () => {
    await recordDraftsRefused(db.pool, "legacy/widgets");
    expect(await noteRepoName(db.pool, "Legacy/Widgets", 9001)).toBe(true);
    expect(await draftsRefused(db.pool, "legacy/widgets")).toBe(false);
    expect(await noteRepoName(db.pool, "legacy/widgets", 9001)).toBe(false);
    expect(await noteRepoName(db.pool, "legacy/widgets", 9002)).toBe(true);
  });
});
