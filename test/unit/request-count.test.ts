/**
 * The GitHub request count (#34): the request policy's hook counts every request a client
 * makes (a retry too), a 304 apart (GitHub does not charge it), and keeps the rate-limit
 * headroom of the installation's last response; /metrics reports the tally.
 */
import nock from "nock";
import { describe, expect, it } from "vitest";
import { appOctokit } from "../../src/github/app-auth.js";
import { RequestCounter, requestTally, tallyRows } from "../../src/github/request-count.js";
import { Metrics } from "../../src/metrics.js";
import { githubThread } from "../../src/runner/wiring/github-thread.js";
import { API, rest, useNock } from "../helpers/intake-github.js";

useNock();

const Octokit = appOctokit({ TETHER_GITHUB_THROTTLE: false });
const limits = (remaining: number) => ({
  "x-ratelimit-limit": "5000",
  "x-ratelimit-remaining": String(remaining),
  "x-ratelimit-reset": "1795000000",
});
const rowsOf = (installation: string) => tallyRows().filter((r) => r.installation === installation);

describe("the GitHub request count", () => {
  it("counts each request of a task's client, a 304 apart, and keeps the last headroom", async () => {
    const counter = new RequestCounter(9101);
    const octokit = new Octokit({ auth: "ghs_test", githubRequests: counter } as Record<
      string,
      unknown
    >);
    const gh = githubThread({
      octokit,
      counter,
      repo: "octo/widgets",
      cloneUrl: "https://github.com/octo/widgets.git",
      loadConfig: async () => ({ ok: false, message: "unused" }),
    });
    const comments = "/repos/octo/widgets/issues/1/comments";
    nock(API)
      .get(comments)
      .query(true)
      .reply(200, [], limits(4990))
      .post(comments)
      .reply(201, rest.issueComment("octo/widgets", 1, 55, "hi"), limits(4989))
      .get("/repos/octo/widgets/issues/1")
      .reply(304, "", limits(4989));
    await gh.listComments(1);
    await gh.createComment(1, "hi");
    await expect(
      octokit.rest.issues.get({ owner: "octo", repo: "widgets", issue_number: 1 }),
    ).rejects.toMatchObject({ status: 304 });

    expect(gh.requests!()).toBe(2);
    expect(counter).toMatchObject({ count: 2, notModified: 1 });
    expect(rowsOf("9101").sort((a, b) => a.count - b.count)).toEqual([
      { installation: "9101", kind: "turn", notModified: true, count: 1 },
      { installation: "9101", kind: "turn", notModified: false, count: 2 },
    ]);
    expect(requestTally.headroom.get("9101")).toEqual({
      remaining: 4989,
      limit: 5000,
      resetAt: 1795000000,
    });

    const text = await new Metrics().render();
    expect(text).toContain(
      'tether_github_requests_total{installation="9101",kind="turn",not_modified="false"} 2',
    );
    expect(text).toContain(
      'tether_github_requests_total{installation="9101",kind="turn",not_modified="true"} 1',
    );
    expect(text).toContain('tether_github_ratelimit_remaining{installation="9101"} 4989');
  });

  it("counts a retried request once per attempt, and an installation client as intake", async () => {
    // The policy's first transient retry waits 1 s (real time; nothing races it).
    const octokit = new Octokit({ auth: { installationId: 9102 } } as Record<string, unknown>);
    // An installation id with a plain token: what Probot's app.auth(id) client carries.
    octokit.hook.before("request", (o) => {
      o.headers.authorization = "token ghs_test";
    });
    nock(API)
      .get("/repos/octo/widgets/issues/1/comments")
      .reply(502, { message: "bad gateway" })
      .get("/repos/octo/widgets/issues/1/comments")
      .reply(200, [], limits(4000));
    await octokit.rest.issues.listComments({ owner: "octo", repo: "widgets", issue_number: 1 });
    expect(rowsOf("9102")).toEqual([
      { installation: "9102", kind: "intake", notModified: false, count: 2 },
    ]);
    expect(requestTally.headroom.get("9102")?.remaining).toBe(4000);
  });
});
