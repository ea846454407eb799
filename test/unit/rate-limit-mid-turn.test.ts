/**
 * A turn's client that runs into a rate limit it cannot wait out (#34): the request fails at
 * once, as before, and the turn's counter says until when GitHub holds it off, which is what
 * sends the turn back to the queue instead of failing it (src/runner/rate-limit-defer.ts).
 */
import nock from "nock";
import { describe, expect, it } from "vitest";
import { appOctokit } from "../../src/github/app-auth.js";
import { recordGithubRequest, RequestCounter } from "../../src/github/request-count.js";
import { Metrics } from "../../src/metrics.js";
import { githubThread } from "../../src/runner/wiring/github-thread.js";
import { API, useNock } from "../helpers/intake-github.js";

useNock();

const Octokit = appOctokit({ TETHER_GITHUB_THROTTLE: false });

function thread(installation: number) {
  const counter = new RequestCounter(installation);
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
  return { gh, counter };
}

describe("a rate limit a turn cannot wait out", () => {
  it("fails the request at once and tells the thread until when", async () => {
    const { gh } = thread(9201);
    const reset = Math.floor(Date.now() / 1000) + 40 * 60;
    nock(API)
      .get("/repos/octo/widgets/issues/1")
      .reply(
        403,
        { message: "API rate limit exceeded for installation." },
        {
          "x-ratelimit-limit": "5000",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset": String(reset),
        },
      );
    expect(gh.limitedUntil!()).toBeNull();
    await expect(gh.getIssue(1)).rejects.toMatchObject({ status: 403 });
    // The policy's wait: until the reset and a second.
    const until = gh.limitedUntil!()!;
    expect(Math.abs(until - (reset + 1) * 1000)).toBeLessThan(2000);
    const text = await new Metrics().render();
    expect(text).toContain('tether_github_ratelimit_remaining{installation="9201"} 0');
  });

  it("a failure that is not a rate limit leaves it unset", async () => {
    const { gh } = thread(9202);
    nock(API).get("/repos/octo/widgets/issues/1").reply(404, { message: "Not Found" });
    await expect(gh.getIssue(1)).rejects.toMatchObject({ status: 404 });
    expect(gh.limitedUntil!()).toBeNull();
  });

  it("the headroom is the REST limit's: a search answer's own limit does not replace it", () => {
    const tally = { counts: new Map(), headroom: new Map() };
    const answer = (resource: string, remaining: number) =>
      recordGithubRequest(
        {
          installation: 9203,
          kind: "intake",
          response: {
            status: 200,
            headers: {
              "x-ratelimit-remaining": String(remaining),
              "x-ratelimit-resource": resource,
            },
          },
        },
        tally,
      );
    answer("core", 4100);
    answer("search", 29);
    expect(tally.headroom.get("9203")?.remaining).toBe(4100);
  });
});
