/**
 * Issue #28 item 5: every place that blanks credentials (core redact, git's redactToken, the
 * error describer's redactSecrets) recognises each credential Tether can meet, whole. GitHub's
 * stateless installation tokens (`ghs_<app id>_<JWT>`, rollout from 2026-04-27) hold two dots:
 * a pattern that stops at the first dot leaves the JWT's payload and signature behind.
 */
import { createSign, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { redact, SECRET_SHAPES } from "../../src/core/redact.js";
import { redactToken } from "../../src/github/git-auth.js";
import { describeError, redactSecrets } from "../../src/github/errors.js";
import { secretIn } from "../../src/publish/secret-scan.js";

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** A stateless installation token as GitHub mints one: an RS256 JWT behind `ghs_<app id>_`. */
function statelessToken(): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "v1" }));
  const payload = b64url(
    JSON.stringify({
      iss: "github",
      sub: "installation:81234567",
      app: 1234567,
      exp: 1777300000,
      iat: 1777296400,
      perm: "cn:r,is:w,pr:w,md:r",
      rep: [987654321],
    }),
  );
  const sig = createSign("RSA-SHA256").update(`${header}.${payload}`).sign(privateKey);
  return `ghs_1234567_${header}.${payload}.${b64url(sig)}`;
}

const STATELESS = statelessToken();

/** Every piece of a token a leak would give away: each dot- or underscore-separated part. */
function pieces(token: string): string[] {
  return token
    .replace(/^(gh[pousr]|github_pat|sk(-ant|-proj|-svcacct)?)[_-]/, "")
    .split(/[._]/)
    .filter((p) => p.length >= 6);
}

const TOKENS: Array<{ what: string; token: string }> = [
  { what: "a stateless installation token", token: STATELESS },
  { what: "a classic installation token", token: `ghs_${"Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"}` },
  { what: "a personal access token", token: `ghp_${"aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"}` },
  { what: "an OAuth token", token: `gho_${"16C7e42F292c6912E7710c838347Ae178B4a"}` },
  { what: "a user-to-server token", token: `ghu_${"16C7e42F292c6912E7710c838347Ae178B4a"}` },
  {
    what: "a refresh token",
    token: `ghr_${"1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498"}`,
  },
  {
    what: "a fine-grained token",
    token:
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
  },
  { what: "a legacy OpenAI key", token: "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" },
  {
    what: "an OpenAI project key",
    token:
      "sk-proj-Ab3_De5-Gh7Jk9Lm1No3Pq5Rs7Tu9Vw1Xy3Za5Bc7De9Fg1Hi3Jk5Lm7No9Pq1Rs3Tu5Vw7Xy9Za1Bc3De5Fg7Hi9Jk1Lm3No5T3BlbkFJPq7Rs9Tu1Vw3Xy5Za7Bc9De1Fg3Hi5Jk7Lm9No1Pq3Rs5Tu7Vw9Xy1Za3Bc5De7Fg9Hi1",
  },
  {
    what: "an OpenAI service-account key",
    token:
      "sk-svcacct-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7T3BlbkFJAs9Df1Gh3Jk5Lz7Xc9Vb1",
  },
  {
    what: "an Anthropic key",
    token:
      "sk-ant-api03-Ab3De5Gh7Jk9Lm1No3Pq5Rs7Tu9Vw1Xy3Za5Bc7De9Fg1Hi3Jk5Lm7No9Pq1Rs3Tu5Vw7Xy9Za1Bc3De5Fg7Hi9-Jk1AA",
  },
];

const REDACTORS: Array<{ where: string; run: (text: string) => string }> = [
  { where: "core redact", run: (t) => redact(t) },
  { where: "git's redactToken (another token in hand)", run: (t) => redactToken(t, "ghs_other") },
  { where: "the error describer's redactSecrets", run: (t) => redactSecrets(t) },
  { where: "describeError", run: (t) => describeError(new Error(t)) },
];

describe("credentials are redacted whole, wherever text is scrubbed", () => {
  it("the stateless token is as long as GitHub's (~520 characters, two dots)", () => {
    expect(STATELESS.length).toBeGreaterThan(480);
    expect(STATELESS.length).toBeLessThan(600);
    expect(STATELESS.split(".")).toHaveLength(3);
    expect(STATELESS).toMatch(/^ghs_[A-Za-z0-9._-]{36,}$/);
  });

  for (const { where, run } of REDACTORS)
    describe(where, () => {
      it.each(TOKENS)("$what", ({ token }) => {
        for (const text of [
          `remote: fetch with ${token} failed.`,
          `{"authorization":"${token}"}`,
          `url=https://x-access-token:${token}@github.com/o/r.git`,
          `${token}`,
        ]) {
          const out = run(text);
          expect(out).toContain("[redacted");
          for (const piece of pieces(token)) expect(out).not.toContain(piece);
        }
      });

      it("keeps the sentence around a token, and plain words", () => {
        expect(run(`saw ${STATELESS}. Then stopped`)).toMatch(/\. Then stopped$/);
        const plain =
          "nothing secret here: task-list risk-assessment sk-learn sk-a-long-hyphenated-slug";
        expect(run(plain)).toContain(plain);
      });
    });

  it.each(TOKENS)("the secret scan before a push finds $what", ({ token }) => {
    expect(secretIn(`const key = "${token}";`, [])).not.toBeNull();
  });

  it("names what it found", () => {
    const kinds = new Set(SECRET_SHAPES.map((s) => s.kind));
    expect(kinds).toContain("an OpenAI API key");
    expect(secretIn(TOKENS[0]!.token, [])).toBe("a GitHub token");
    expect(secretIn(TOKENS.find((t) => t.what === "an OpenAI project key")!.token, [])).toBe(
      "an OpenAI API key",
    );
    expect(secretIn(TOKENS.find((t) => t.what === "an Anthropic key")!.token, [])).toBe(
      "an Anthropic API key",
    );
  });
});
