/**
 * Draft pull requests where the repository has none (a private repository on a Free or Pro
 * plan): GitHub answers 422, Tether opens the same pull request ready for review, and remembers
 * the repository in Postgres so the next pull request there is opened ready without the failing
 * request. The exact requests, over nock, through the runner's real RepoWriter.
 */
import nock from "nock";
import { describe, expect, it } from "vitest";
import { openPull } from "../../src/publish/publisher.js";
import { githubThread } from "../../src/runner/wiring/github-thread.js";
import { draftsRefused } from "../../src/sql/repo-facts.js";
import { createTestDatabase } from "../helpers/db.js";
import { rest } from "../helpers/rest-shapes.js";
import { API, useNock } from "../helpers/intake-github.js";
import { TestOctokit } from "../helpers/probot.js";

useNock();
const db = await createTestDatabase();

function writer(repo: string) {
  const w = githubThread({
    octokit: new TestOctokit({ auth: "ghs_test" }),
    repo,
    cloneUrl: `https://github.com/${repo}.git`,
    loadConfig: async () => ({ ok: false, message: "unused" }),
    publishing: {
      app: () => Promise.reject(new Error("not used here")),
      installationId: 1,
      repoId: 1296269,
      webUrl: "https://github.com",
      writeClient: () => {
        throw new Error("not used here");
      },
    },
  }).writer;
  if (!w) throw new Error("no writer");
  return w;
}

/** GitHub's answer to a draft on a private repository of a Free or Pro plan. */
const REFUSED = {
  message: "Validation Failed",
  errors: [
    {
      resource: "PullRequest",
      code: "custom",
      message: "Draft pull requests are not supported in this repository.",
    },
  ],
  documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
  status: "422",
};

const pullJson = (repo: string, number: number, draft: boolean) => rest.pull(repo, number, draft);

/** Interceptors for `POST /repos/{repo}/pulls`, recording the `draft` each one was sent. */
function pulls(repo: string) {
  const sent: boolean[] = [];
  const api = nock(API);
  const post = (draft: boolean) =>
    api.post(`/repos/${repo}/pulls`, (b: { draft?: boolean; head?: string }) => {
      if (b.draft !== draft) return false;
      sent.push(draft);
      return true;
    });
  return { sent, post };
}

const ask = (draft: boolean, head = "tether/3-tether") => ({
  title: "Gadgets",
  head,
  base: "main",
  body: "Did it.",
  draft,
});

describe("opening a pull request where drafts are refused", () => {
  it("retries the same pull request ready, says so, and remembers the repository", async () => {
    const repo = "octo/private-one";
    const p = pulls(repo);
    p.post(true).reply(422, REFUSED);
    p.post(false).reply(201, pullJson(repo, 5, false));
    const first = await openPull(db.pool, writer(repo), repo, ask(true));
    expect(p.sent).toEqual([true, false]);
    expect(first).toEqual({
      pull: {
        number: 5,
        url: `https://github.com/${repo}/pull/5`,
        state: "open",
        merged: false,
        draft: false,
      },
      draftsUnsupported: true,
    });
    expect(await draftsRefused(db.pool, repo)).toBe(true);

    // The next pull request there (another issue's): ready at once, no refused request first.
    const q = pulls(repo);
    q.post(false).reply(201, pullJson(repo, 6, false));
    const second = await openPull(db.pool, writer(repo), repo, ask(true, "tether/4-tether"));
    expect(q.sent).toEqual([false]);
    expect(second.draftsUnsupported).toBe(true);
    // The fact is the repository's, whatever case its name came in.
    expect(await draftsRefused(db.pool, "Octo/Private-One")).toBe(true);
  });

  it("another repository still gets its draft", async () => {
    const repo = "octo/public-one";
    const p = pulls(repo);
    p.post(true).reply(201, pullJson(repo, 9, true));
    const r = await openPull(db.pool, writer(repo), repo, ask(true));
    expect(p.sent).toEqual([true]);
    expect(r).toMatchObject({ pull: { number: 9, draft: true }, draftsUnsupported: false });
    expect(await draftsRefused(db.pool, repo)).toBe(false);
  });

  it("with publish.draft off, one ready request and nothing to say", async () => {
    const repo = "octo/private-two";
    const p = pulls(repo);
    p.post(false).reply(201, pullJson(repo, 2, false));
    const r = await openPull(db.pool, writer(repo), repo, ask(false));
    expect(p.sent).toEqual([false]);
    expect(r.draftsUnsupported).toBe(false);
  });

  it("any other 422 is GitHub's answer as it is: no second request, nothing remembered", async () => {
    const repo = "octo/private-three";
    const p = pulls(repo);
    p.post(true).reply(422, {
      message: "Validation Failed",
      errors: [
        {
          resource: "PullRequest",
          code: "custom",
          message: "A pull request already exists for octo:tether/3-tether.",
        },
      ],
      documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    });
    await expect(openPull(db.pool, writer(repo), repo, ask(true))).rejects.toMatchObject({
      status: 422,
    });
    expect(p.sent).toEqual([true]);
    expect(await draftsRefused(db.pool, repo)).toBe(false);
  });

  it("a refusal a month old is forgotten: the repository may have drafts again", async () => {
    const repo = "octo/private-four";
    const p = pulls(repo);
    p.post(true).reply(422, REFUSED);
    p.post(false).reply(201, pullJson(repo, 1, false));
    await openPull(db.pool, writer(repo), repo, ask(true));
    await db.pool.query(
      `UPDATE repo_facts SET drafts_refused_at = now() - interval '31 days' WHERE repo = $1`,
      [repo],
    );
    const q = pulls(repo);
    q.post(true).reply(201, pullJson(repo, 2, true));
    const r = await openPull(db.pool, writer(repo), repo, ask(true, "tether/5-tether"));
    expect(q.sent).toEqual([true]);
    expect(r).toMatchObject({ pull: { draft: true }, draftsUnsupported: false });
  });
});
