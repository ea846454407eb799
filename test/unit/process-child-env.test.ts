import { describe, expect, it } from "vitest";
import { CLAUDE_ENV_PREFIXES, claudeDialect } from "../../src/claude/claude-cli.js";
import { buildChildEnv, withheldNames } from "../../src/process/child-env.js";

/** A CLI passes its own settings by prefix (Claude's, here: its registry entry's). */
const CLAUDE = { prefixes: CLAUDE_ENV_PREFIXES };

/** Everything a Tether process may have in its environment. */
const RUNNER_ENV: Record<string, string> = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/tether",
  USER: "tether",
  LOGNAME: "tether",
  SHELL: "/bin/bash",
  LANG: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  TZ: "UTC",
  TERM: "xterm",
  TMPDIR: "/tmp",
  NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
  SSL_CERT_FILE: "/etc/ssl/cert.pem",
  SSL_CERT_DIR: "/etc/ssl/certs",
  HTTPS_PROXY: "http://proxy:3128",
  https_proxy: "http://proxy:3128",
  NO_PROXY: "localhost",
  no_proxy: "localhost",
  ANTHROPIC_API_KEY: "sk-ant-user",
  ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
  ANTHROPIC_MODEL: "claude-sonnet-4-5",
  CLAUDE_CODE_USE_BEDROCK: "0",
  DISABLE_TELEMETRY: "1",
  DISABLE_NON_ESSENTIAL_MODEL_CALLS: "1",
  // Secrets and Tether's own settings.
  APP_ID: "12345",
  PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----",
  PRIVATE_KEY_PATH: "/secrets/app.pem",
  WEBHOOK_SECRET: "whsec",
  DATABASE_URL: "postgres://u:p@db/tether",
  GITHUB_TOKEN: "ghs_installation",
  GH_TOKEN: "gho_user",
  GITHUB_APP_PRIVATE_KEY: "pem",
  TETHER_DASHBOARD_TOKEN: "dash-token-0123456789",
  TETHER_CLAUDE_PATH: "/opt/claude",
  PGPASSWORD: "pw",
  PGHOST: "db",
  // Would pass the allowlist by prefix: the denylist must win.
  ANTHROPIC_GITHUB_TOKEN: "ghs_sneaky",
  CLAUDE_CODE_PRIVATE_KEY: "pem2",
  // Neither allowed nor denied: dropped.
  AWS_SECRET_ACCESS_KEY: "aws",
  NPM_TOKEN: "npm",
  SOME_RANDOM_VAR: "x",
};

describe("buildChildEnv", () => {
  const env = buildChildEnv(RUNNER_ENV, CLAUDE);

  const passes = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "TZ",
    "TERM",
    "TMPDIR",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "DISABLE_TELEMETRY",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS",
  ];
  it.each(passes)("passes %s", (name) => {
    expect(env[name]).toBe(RUNNER_ENV[name]);
  });

  const kept = [
    "APP_ID",
    "PRIVATE_KEY",
    "PRIVATE_KEY_PATH",
    "WEBHOOK_SECRET",
    "DATABASE_URL",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
    "TETHER_DASHBOARD_TOKEN",
    "TETHER_CLAUDE_PATH",
    "PGPASSWORD",
    "PGHOST",
    "ANTHROPIC_GITHUB_TOKEN",
    "CLAUDE_CODE_PRIVATE_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "NPM_TOKEN",
    "SOME_RANDOM_VAR",
  ];
  it.each(kept)("keeps out %s", (name) => {
    expect(env).not.toHaveProperty(name);
  });

  it("no secret value reaches the child under any name", () => {
    const values = Object.values(env).join("\n");
    for (const secret of [
      "ghs_",
      "gho_",
      "BEGIN RSA",
      "whsec",
      "postgres://",
      "dash-token",
      "pw\n",
    ]) {
      expect(values).not.toContain(secret);
    }
  });

  it("turns off self-update (and Claude's non-essential traffic) unless the operator chose otherwise", () => {
    expect(env.DISABLE_AUTOUPDATER).toBe("1");
    const o = { home: undefined, extra: undefined, settings: {} } as unknown as Parameters<
      typeof claudeDialect.env
    >[1];
    expect(claudeDialect.env(RUNNER_ENV, o).CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
    const chosen = buildChildEnv({ DISABLE_AUTOUPDATER: "0" });
    expect(chosen.DISABLE_AUTOUPDATER).toBe("0");
    const claudeChosen = claudeDialect.env({ CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "0" }, o);
    expect(claudeChosen.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("0");
  });

  it("passes a CLI's settings only to that CLI: no prefix, no ANTHROPIC_* or CLAUDE_CODE_*", () => {
    const other = buildChildEnv(RUNNER_ENV);
    expect(Object.keys(other).filter((k) => /^(ANTHROPIC_|CLAUDE_CODE_)/.test(k))).toEqual([]);
  });

  it("sets HOME for the child and adds extra variables, the denylist still applying", () => {
    const child = buildChildEnv(RUNNER_ENV, {
      home: "/var/tether/runtime-home",
      extra: {
        GIT_AUTHOR_NAME: "tether[bot]",
        GITHUB_TOKEN: "ghs_again",
        TETHER_X: "1",
        PGUSER: "u",
      },
    });
    expect(child.HOME).toBe("/var/tether/runtime-home");
    expect(child.GIT_AUTHOR_NAME).toBe("tether[bot]");
    expect(child).not.toHaveProperty("GITHUB_TOKEN");
    expect(child).not.toHaveProperty("TETHER_X");
    expect(child).not.toHaveProperty("PGUSER");
  });

  it("matches denied names without regard to case", () => {
    const child = buildChildEnv(
      {},
      { extra: { github_token: "x", Gh_Token: "y", database_url: "z" } },
    );
    expect(Object.keys(child).sort()).toEqual(["DISABLE_AUTOUPDATER", "PATH"].sort());
  });

  it("gives the child a PATH even when the runner has none", () => {
    expect(buildChildEnv({}).PATH).toBe("/usr/local/bin:/usr/bin:/bin");
  });

  it("lists what it withheld by name only", () => {
    const names = withheldNames(RUNNER_ENV, CLAUDE);
    expect(names).toEqual([...kept].sort());
  });
});
