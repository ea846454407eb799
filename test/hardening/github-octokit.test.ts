/**
 * The app's Octokit against the GitHub stand-in: rate limits, primary and secondary, are waited
 * out and the request retried, with or without write spacing (TETHER_GITHUB_THROTTLE=false,
 * how the end-to-end drills run it, drops only the spacing).
 */
import { Probot } from "probot";
import { afterAll, describe, expect, it } from "vitest";
import { appOctokit } from "../../src/github/app-auth.js";
import { rateLimited, secondaryRateLimited, startFakeGitHub } from "../helpers/fake-github.js";

const gh = await startFakeGitHub();
await gh.addRepo({ owner: "octo", name: "widgets" });
const issue = gh.addIssue({ repo: "octo/widgets", title: "t", body: "b" }).number as number;
afterAll(() => gh.close());

const octokit = await new Probot({
  appId: gh.appId,
  privateKey: gh.privateKeyPem,
  baseUrl: gh.apiUrl,
  Octokit: appOctokit({ TETHER_GITHUB_THROTTLE: false }),
}).auth(gh.installationId);
const where = { owner: "octo", repo: "widgets", issue_number: issue };

describe("the app's Octokit without write spacing", { timeout: 20_000 }, () => {
  it("waits for a primary rate limit's reset and retries", async () => {
    gh.failNext({ method: "GET", path: /\/issues\/\d+$/ }, rateLimited(1));
    const started = Date.now();
    const { data } = await octokit.rest.issues.get(where);
    expect(data.number).toBe(issue);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("waits out a secondary rate limit on a write and retries it", async () => {
    gh.failNext({ method: "POST", path: /\/comments$/ }, secondaryRateLimited(1));
    const started = Date.now();
    const { data } = await octokit.rest.issues.createComment({ ...where, body: "after the wait" });
    expect(data.body).toBe("after the wait");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(gh.postedComments("octo/widgets", issue).map((r) => r.status)).toEqual([201]);
  });

  it("does not space writes (Probot's default is one a second, comments three seconds apart)", async () => {
    const started = Date.now();
    for (let i = 0; i < 4; i++)
      await octokit.rest.issues.createComment({ ...where, body: `n${i}` });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("the app's Octokit as shipped (write spacing on)", { timeout: 20_000 }, () => {
  it("waits out a secondary rate limit too (Probot's own options give up on the first)", async () => {
    const spaced = await new Probot({
      appId: gh.appId,
      privateKey: gh.privateKeyPem,
      baseUrl: gh.apiUrl,
      Octokit: appOctokit({ TETHER_GITHUB_THROTTLE: true }),
    }).auth(gh.installationId);
    gh.failNext({ method: "POST", path: /\/comments$/ }, secondaryRateLimited(1));
    const started = Date.now();
    const { data } = await spaced.rest.issues.createComment({ ...where, body: "spaced" });
    expect(data.body).toBe("spaced");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
