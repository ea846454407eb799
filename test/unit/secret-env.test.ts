/**
 * Issue #28 item 5: one list of the secret environment variables, in core, from which both the
 * log scrubber (main.ts) and the runner's scrubbing (start-runner.ts) take their values. The
 * two had drifted: OPENAI_API_KEY was in the runner's copy only.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { redact } from "../../src/core/redact.js";
import { CLI_SECRETS } from "../../src/cli-registry.js";
import { SECRET_ENV_NAMES, secretsInEnv } from "../../src/core/secret-env.js";

const SRC = path.resolve(import.meta.dirname, "../../src");

describe("SECRET_ENV_NAMES and secretsInEnv", () => {
  it.each([
    "PRIVATE_KEY",
    "WEBHOOK_SECRET",
    "DATABASE_URL",
    "TETHER_DASHBOARD_TOKEN",
    "TETHER_METRICS_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
  ])("lists %s, and its value is scrubbed", (name) => {
    expect([...SECRET_ENV_NAMES, ...CLI_SECRETS.names]).toContain(name);
    const value = `value-of-${name.toLowerCase()}-0123456789`;
    const secrets = secretsInEnv({ [name]: value, PATH: "/usr/bin:/bin" }, CLI_SECRETS);
    expect(secrets).toEqual([value]);
    expect(redact(`log line with ${value} in it`, secrets)).toBe("log line with [redacted] in it");
  });

  it("takes the password out of DATABASE_URL, as written and decoded", () => {
    const secrets = secretsInEnv(
      {
        DATABASE_URL: "postgres://tether:p%40ss-w0rd-long@db.internal:5432/tether",
      },
      CLI_SECRETS,
    );
    expect(secrets).toContain("p%40ss-w0rd-long");
    expect(secrets).toContain("p@ss-w0rd-long");
    expect(redact('password authentication failed: "p@ss-w0rd-long"', secrets)).not.toContain(
      "w0rd",
    );
  });

  it("takes the values of ANTHROPIC_CUSTOM_HEADERS, not their names", () => {
    const secrets = secretsInEnv(
      {
        ANTHROPIC_CUSTOM_HEADERS: "X-Proxy-Key: proxy-credential-12345\nX-Team: blue-team-name",
      },
      CLI_SECRETS,
    );
    expect(secrets).toEqual(["proxy-credential-12345", "blue-team-name"]);
  });

  it("leaves out what is unset, empty or not a secret, and a DATABASE_URL that is no URL", () => {
    expect(
      secretsInEnv(
        { OPENAI_API_KEY: "", PATH: "/bin", LOG_LEVEL: "info", DATABASE_URL: "::" },
        CLI_SECRETS,
      ),
    ).toEqual(["::"]);
  });

  it("is the only copy: main.ts and start-runner.ts take their secrets from it", () => {
    for (const file of ["main.ts", "runner/wiring/start-runner.ts"]) {
      const text = fs.readFileSync(path.join(SRC, file), "utf8");
      expect(text, file).toMatch(/secretsInEnv\(/);
      // No list of its own: no stretch of the file names three secret variables.
      const all = [...SECRET_ENV_NAMES, ...CLI_SECRETS.names];
      const names = [...text.matchAll(new RegExp(`\\b(${all.join("|")})\\b`, "g"))];
      for (const m of names) {
        const near = names.filter((n) => Math.abs(n.index - m.index) < 400).map((n) => n[1]);
        expect(new Set(near).size, `${file} lists ${near.join(", ")}`).toBeLessThan(3);
      }
    }
  });
});
