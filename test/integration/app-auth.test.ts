import { Probot, ProbotOctokit } from "probot";
import { afterAll, describe, expect, it } from "vitest";
import { appOctokit, githubApiUrl } from "../../src/github/app-auth.js";
import { startFakeGitHub } from "../helpers/fake-github.js";

const gh = await startFakeGitHub();
await gh.addRepo({ owner: "octo", name: "widgets" });
afterAll(() => gh.close());

const probot = (Octokit: typeof ProbotOctokit) =>
  new Probot({ appId: gh.appId, privateKey: gh.privateKeyPem, baseUrl: gh.apiUrl, Octokit });

describe("the app's Octokit on GitHub Enterprise (or a local stand-in)", () => {
  it("fetches an installation token from the configured host when asked directly", async () => {
    const octokit = await probot(appOctokit({ TETHER_GITHUB_THROTTLE: false })).auth(
      gh.installationId,
    );
    const { token } = (await octokit.auth({ type: "installation" })) as { token: string };
    expect(gh.issuedTokens()).toContain(token);
  });

  it("(plain ProbotOctokit asks api.github.com instead — the reason for the fix)", async () => {
    const octokit = await probot(ProbotOctokit.defaults({ retry: { enabled: false } })).auth(
      gh.installationId,
    );
    await expect(octokit.auth({ type: "installation" })).rejects.toThrow(
      /api\.github\.com|fetch failed|ENOTFOUND|EAI_AGAIN/,
    );
  });

  it("derives the REST base from GHE_HOST", () => {
    expect(githubApiUrl({ GHE_HOST: "ghe.example:8443", GHE_PROTOCOL: "https" })).toBe(
      "https://ghe.example:8443/api/v3",
    );
    expect(githubApiUrl({ GHE_HOST: undefined, GHE_PROTOCOL: "https" })).toBe(
      "https://api.github.com",
    );
  });
});
