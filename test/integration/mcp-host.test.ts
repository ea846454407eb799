/**
 * A stdio MCP server holding a secret runs in a bubblewrap sandbox of its own (#39,
 * src/sandbox/mcp-host.ts): real bwrap, real egress proxy. What it sees: its own environment,
 * none of the agent's workspace, and no network but the hosts its entry lists.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { McpStdioServer } from "../../src/config/mcp-servers.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-mcp-host-"));
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await Sandbox.start({
    mode: "bwrap",
    stateDir: path.join(root, "sandbox"),
    log: pino({ level: "silent" }),
  });
  expect(sandbox.status).toMatchObject({ ok: true });
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Starts the agent's sandbox with the server behind its socket; returns what one connection printed. */
async function serverOutput(server: McpStdioServer): Promise<string> {
  const workspace = fs.mkdtempSync(path.join(root, "w-"));
  fs.writeFileSync(path.join(workspace, "agent-file.txt"), "the agent's");
  const prepared = await sandbox.prepare({
    workspace,
    env: { PATH: "/usr/bin:/bin" },
    command: ["true"],
    mcpHosts: [{ name: "probe", server }],
  });
  try {
    return await new Promise<string>((resolve, reject) => {
      const s = net.connect(path.join(prepared.cwd, "mcp-probe.sock"));
      let out = "";
      s.on("data", (d: Buffer) => (out += d.toString("utf8")));
      s.on("end", () => resolve(out));
      s.on("error", reject);
      s.end();
    });
  } finally {
    await prepared.dispose();
  }
}

const script = (lines: string[]): McpStdioServer => ({
  type: "stdio",
  command: "/bin/sh",
  args: ["-c", lines.join("\n")],
  env: { PROBE_SECRET: "the-servers-own-secret" },
  network: [],
});

describe("a stdio MCP server's own sandbox (#39)", { timeout: 60_000 }, () => {
  it("holds its env, not the agent's workspace, and has no network", async () => {
    const out = await serverOutput(
      script([
        'echo "secret=$PROBE_SECRET"',
        'ls /workspace/agent-file.txt >/dev/null 2>&1 && echo "sees=workspace" || echo "sees=none"',
        'curl -s -m 5 -o /dev/null https://example.com; echo "curl=$?"',
        'echo "proxy=${HTTPS_PROXY:-none}"',
      ]),
    );
    expect(out).toContain("secret=the-servers-own-secret");
    expect(out).toContain("sees=none");
    expect(out).toMatch(/curl=(6|7)\b/);
    expect(out).toContain("proxy=none");
  });

  it("reaches out only through an egress of its own, which refuses a host its entry does not list", async () => {
    const out = await serverOutput({
      ...script([
        'echo "proxy=$HTTPS_PROXY"',
        'echo "connect=$(curl -s -m 5 -o /dev/null -w "%{http_connect}" https://not-listed.example)"',
      ]),
      network: ["api.allowed.example"],
    });
    expect(out).toContain("proxy=http://127.0.0.1:8088");
    expect(out).toContain("connect=403");
  });
});
