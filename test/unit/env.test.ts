import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { applyEnvFile, EnvError, loadEnv } from "../../src/env.js";

describe("loadEnv", () => {
  it("applies defaults for an empty environment", () => {
    const env = loadEnv({}, "/srv/tether");
    expect(env.PORT).toBe(3000);
    expect(env.TETHER_ROLE).toBe("all");
    expect(env.TETHER_RUNNER_CONCURRENCY).toBe(2);
    expect(env.TETHER_REDELIVER_MINUTES).toBe(5);
    expect(env.TETHER_REDELIVER_SETTLE_MS).toBe(120_000);
    expect(env.dataDir).toBe("/srv/tether/.data");
    expect(env.workspaceDir).toBe("/srv/tether/.data/workspaces");
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it("treats empty strings as unset", () => {
    expect(loadEnv({ APP_ID: "", DATABASE_URL: "" }).APP_ID).toBeUndefined();
  });

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: "eighty" }, /^PORT: must be a whole number/m],
    [{ PORT: "70000" }, /^PORT: must be at most 65535/m],
    [{ TETHER_RUNNER_CONCURRENCY: "0" }, /^TETHER_RUNNER_CONCURRENCY: must be at least 1/m],
    [{ TETHER_ROLE: "worker" }, /^TETHER_ROLE: .*"worker"/m],
    [{ DATABASE_URL: "mysql://x" }, /^DATABASE_URL: must be a postgres:\/\/ .*\(got \(hidden\)\)/m],
    [{ APP_ID: "12" }, /^PRIVATE_KEY: APP_ID is set/m],
    [{ APP_ID: "12", PRIVATE_KEY: "k" }, /^WEBHOOK_SECRET: APP_ID is set/m],
    [{ GHE_HOST: "https://ghe.example" }, /^GHE_HOST: must be a host name/m],
    [
      { TETHER_DASHBOARD_TOKEN: "short" },
      /^TETHER_DASHBOARD_TOKEN: must be at least 16 .*\(hidden\)/m,
    ],
    [
      { TETHER_PUBLIC_HOSTS: "tether.example.com, https://tether.example.com" },
      /^TETHER_PUBLIC_HOSTS: "https:\/\/tether.example.com" is not a host name; .*without scheme, port or path/m,
    ],
    [
      { TETHER_PUBLIC_HOSTS: "tether.example.com:443" },
      /^TETHER_PUBLIC_HOSTS: "tether.example.com:443"/m,
    ],
    [{ TETHER_PUBLIC_URL: "tether.example.com" }, /^TETHER_PUBLIC_URL: must be a URL/m],
    [
      { TETHER_PUBLIC_URL: "https://tether.example.com/?x=1" },
      /^TETHER_PUBLIC_URL: must be an http\(s\) URL without query/m,
    ],
    [{ TETHER_PUBLIC_URL: "javascript:alert(1)" }, /^TETHER_PUBLIC_URL: must be /m],
    [{ TETHER_LIVE: "public" }, /^TETHER_LIVE: /m],
    [{ TETHER_LIVE_LINK_DAYS: "0" }, /^TETHER_LIVE_LINK_DAYS: must be at least 1/m],
    [{ TETHER_PROGRESS_EDIT_SECONDS: "1" }, /^TETHER_PROGRESS_EDIT_SECONDS: must be at least 3/m],
    [{ TETHER_WEBHOOK_MAX_BYTES: "1000" }, /^TETHER_WEBHOOK_MAX_BYTES: must be at least 65536/m],
    [{ TETHER_REDELIVER_MINUTES: "-1" }, /^TETHER_REDELIVER_MINUTES: must be at least 0/m],
    [{ TETHER_REDELIVER_MINUTES: "2.5" }, /^TETHER_REDELIVER_MINUTES: must be a whole number/m],
    [
      { TETHER_PROXY_SERVER_TOOLS: "web_search, https://evil.example/mcp" },
      /^TETHER_PROXY_SERVER_TOOLS\.1: each entry must be a tool type prefix such as web_search/m,
    ],
    [
      { TETHER_WEBHOOK_MAX_BYTES: String(26 * 1024 * 1024) },
      /^TETHER_WEBHOOK_MAX_BYTES: must be at most 26214400/m,
    ],
  ];
  it.each(bad)("rejects %j naming the variable", (source, message) => {
    let error: unknown;
    try {
      loadEnv(source);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EnvError);
    expect(
      (error as Error).message
        .split("\n")
        .slice(1)
        .join("\n")
        .replace(/^ {2}- /gm, ""),
    ).toMatch(message);
  });

  it("reads TETHER_PUBLIC_HOSTS as a list of lower-case names", () => {
    expect(
      loadEnv({ TETHER_PUBLIC_HOSTS: " Tether.Example.com, ,ops.internal. " }).TETHER_PUBLIC_HOSTS,
    ).toEqual(["tether.example.com", "ops.internal"]);
    expect(loadEnv({}).TETHER_PUBLIC_HOSTS).toBeUndefined();
    expect(loadEnv({}).TETHER_WEBHOOK_MAX_BYTES).toBe(2 * 1024 * 1024);
  });

  it("reads TETHER_PROXY_SERVER_TOOLS as a list of tool type prefixes, none by default", () => {
    expect(loadEnv({}).TETHER_PROXY_SERVER_TOOLS).toBeUndefined();
    expect(
      loadEnv({ TETHER_PROXY_SERVER_TOOLS: " web_search, ,google_search " })
        .TETHER_PROXY_SERVER_TOOLS,
    ).toEqual(["web_search", "google_search"]);
  });

  it("never echoes a secret's value", () => {
    try {
      loadEnv({ TETHER_DASHBOARD_TOKEN: "sekrit" });
    } catch (e) {
      expect((e as Error).message).not.toContain("sekrit");
    }
  });
});

describe("applyEnvFile", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-envfile-"));
  fs.writeFileSync(
    path.join(dir, ".env"),
    'APP_ID=123\nWEBHOOK_SECRET=from-file\n# comment\nPRIVATE_KEY="-----BEGIN\\nX"\n',
  );

  it("fills in what the environment does not set, from .env by default", () => {
    const target: NodeJS.ProcessEnv = { WEBHOOK_SECRET: "from-env" };
    expect(applyEnvFile(target, dir).sort()).toEqual(["APP_ID", "PRIVATE_KEY"]);
    expect(target).toMatchObject({ APP_ID: "123", WEBHOOK_SECRET: "from-env" });
  });

  it("reads the file TETHER_ENV_FILE names, and none when it is empty or missing", () => {
    fs.writeFileSync(path.join(dir, "other.env"), "PORT=4000\n");
    const named: NodeJS.ProcessEnv = { TETHER_ENV_FILE: "other.env" };
    applyEnvFile(named, dir);
    expect(named.PORT).toBe("4000");
    const none: NodeJS.ProcessEnv = { TETHER_ENV_FILE: "" };
    expect(applyEnvFile(none, dir)).toEqual([]);
    expect(applyEnvFile({ TETHER_ENV_FILE: "missing.env" }, dir)).toEqual([]);
  });
});

describe("the live view's settings", () => {
  it("default to a signed link valid 7 days and milestone edits a minute apart", () => {
    const env = loadEnv({});
    expect(env.TETHER_LIVE).toBe("on");
    expect(env.TETHER_LIVE_LINK_DAYS).toBe(7);
    expect(env.TETHER_PROGRESS_EDIT_SECONDS).toBe(60);
    expect(loadEnv({ TETHER_LIVE: "token" }).TETHER_LIVE).toBe("token");
  });
});
