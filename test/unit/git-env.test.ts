import { describe, expect, it } from "vitest";
import { hostGitEnv } from "../../src/workspace/git.js";

describe("hostGitEnv", () => {
  it("passes PATH, the way to the network and git's TLS settings, and nothing else of the runner's", () => {
    const source: Record<string, string> = {};
    for (const name of [
      ...["PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "NODE_EXTRA_CA_CERTS", "GIT_DIR"],
      ...["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"],
      ...["ALL_PROXY", "all_proxy", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"],
      ...["SSL_CERT_FILE", "SSL_CERT_DIR", "GITHUB_TOKEN", "ANTHROPIC_API_KEY", "PGPASSWORD"],
    ])
      source[name] = `v-${name}`;
    const passed = [
      "PATH",
      "HTTPS_PROXY",
      "https_proxy",
      "HTTP_PROXY",
      "http_proxy",
      "NO_PROXY",
      "no_proxy",
      "ALL_PROXY",
      "all_proxy",
      "GIT_SSL_CAINFO",
      "GIT_SSL_CAPATH",
      "SSL_CERT_FILE",
      "SSL_CERT_DIR",
    ];
    expect(hostGitEnv("/git-home", source)).toEqual({
      LC_ALL: "C",
      GIT_TERMINAL_PROMPT: "0",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      HOME: "/git-home",
      XDG_CONFIG_HOME: "/git-home",
      ...Object.fromEntries(passed.map((name) => [name, `v-${name}`])),
    });
  });

  it("has a PATH when the runner has none", () => {
    expect(hostGitEnv("/h", {}).PATH).toBe("/usr/local/bin:/usr/bin:/bin");
    expect(hostGitEnv("/h", { PATH: "" }).PATH).toBe("/usr/local/bin:/usr/bin:/bin");
  });
});
