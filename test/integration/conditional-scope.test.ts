/**
 * A pinned answer is served only to a token of the scope that got it (#38). The intake reads the
 * config with the installation's own token (every repository); a turn reads it with a token for
 * its one repository (src/github/scoped-auth.ts). GitHub answers each as its scope allows (a
 * repository outside a token's is a 404), so what one was answered, a 404 included, says nothing
 * about what the other would be. The app's real clients against the GitHub stand-in, which
 * scopes its tokens as GitHub does; the answers in a real Postgres.
 */
import { AGENT_CLIS } from "../../src/cli-registry.js";
import { pino } from "pino";
import { Probot } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRepoConfig, type ConfigOctokit } from "../../src/config/load-repo-config.js";
import { appOctokit } from "../../src/github/app-auth.js";
import { postgresAnswers } from "../../src/github/conditional-requests.js";
import { RequestCounter } from "../../src/github/request-count.js";
import { scopedOctokit, THREAD_PERMISSIONS } from "../../src/github/scoped-auth.js";
import { takePush } from "../../src/intake/config-push.js";
import { createTestDatabase } from "../helpers/db.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";

const db = await createTestDatabase();
let gh: FakeGitHub;
let probot: Probot;
let Octokit: ReturnType<typeof appOctokit>;

beforeAll(async () => {
  gh = await startFakeGitHub();
  Octokit = appOctokit({ TETHER_GITHUB_THROTTLE: false }, { answers: postgresAnswers(db.pool) });
  probot = new Probot({
    appId: gh.appId,
    privateKey: gh.privateKeyPem,
    baseUrl: gh.apiUrl,
    log: pino({ level: "silent" }),
    Octokit,
  });
});
afterAll(async () => {
  await gh?.close();
});

const ORG_YAML = "agents:\n  tether:\n    model: claude-opus-4-1\n";

/** An owner with a repository without a config and an org `.github` repository with one. */
async function owner(name: string) {
  const repoId = (await gh.addRepo({ owner: name, name: "widgets" })).id as number;
  await gh.addRepo({ owner: name, name: ".github", files: { ".github/tether.yml": ORG_YAML } });
  // Pushes seen from both: their config answers are pinned.
  for (const repo of ["widgets", ".github"])
    await takePush(db.pool, {
      ref: "refs/heads/main",
      repository: { full_name: `${name}/${repo}`, default_branch: "main" },
    });
  const app = await probot.auth();
  const counter = new RequestCounter(gh.installationId);
  // A turn's client: a token for the one repository, the thread's permissions.
  const turn = scopedOctokit(
    app,
    Octokit,
    {
      installationId: gh.installationId,
      repo: `${name}/widgets`,
      repoId,
      permissions: THREAD_PERMISSIONS,
    },
    { baseUrl: gh.apiUrl, githubRequests: counter },
  ) as unknown as ConfigOctokit;
  // The intake's client: the installation's token, every repository.
  const intake = (await probot.auth(gh.installationId)) as unknown as ConfigOctokit;
  const model = async (o: ConfigOctokit) => {
    const loaded = await loadRepoConfig(o, { owner: name, repo: "widgets" }, { clis: AGENT_CLIS });
    expect(loaded.ok).toBe(true);
    return loaded.ok ? (loaded.config.agents.tether?.model ?? null) : "broken";
  };
  return { turn, intake, model };
}

const orgReads = (name: string) =>
  gh.requests.filter(
    (r) => r.method === "GET" && r.path.startsWith(`/api/v3/repos/${name}/.github/contents/`),
  );

describe("a pinned config answer and the token's scope", () => {
  it("the 404 a repository-scoped token got for the org's file is not served to the installation's token", async () => {
    const { turn, intake, model } = await owner("acme");
    // The turn's token does not cover acme/.github: GitHub answers it 404.
    expect(await model(turn)).not.toBe("claude-opus-4-1");
    expect(await model(intake)).toBe("claude-opus-4-1");
  });

  it("the org's file the installation's token read is not served to a token that cannot read it", async () => {
    const { turn, intake, model } = await owner("umbrella");
    expect(await model(intake)).toBe("claude-opus-4-1");
    const before = orgReads("umbrella").length;
    expect(await model(turn)).not.toBe("claude-opus-4-1");
    // Asked GitHub, as that token, and was told what that token may know.
    expect(orgReads("umbrella").slice(before)).toEqual([expect.objectContaining({ status: 404 })]);
  });

  it("the same scope still gets its pinned answer without asking", async () => {
    const { intake, model } = await owner("initech");
    expect(await model(intake)).toBe("claude-opus-4-1");
    const before = orgReads("initech").length;
    expect(await model(intake)).toBe("claude-opus-4-1");
    expect(orgReads("initech").length).toBe(before);
  });
});
