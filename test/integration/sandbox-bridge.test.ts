/**
 * The in-sandbox bridge to the egress proxy, in a real bubblewrap sandbox: by default the command
 * starts only once the bridge listens, so its very first connection gets through; a command that
 * starts beside it (a CLI that boots for far longer than socat) still finds it listening shortly.
 */
import { execa } from "execa";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { bridgeCommand } from "../../src/sandbox/init-script.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

const log = createLogger("silent");

describe("bridgeCommand", () => {
  it("waits for the listener unless told not to, and always starts socat first", () => {
    const waits = bridgeCommand(["/bin/true"])[2]!;
    const starts = bridgeCommand(["/bin/true"], { wait: false })[2]!;
    for (const s of [waits, starts]) expect(s.split("\n")[0]).toMatch(/^socat .*TCP-LISTEN:8088/);
    expect(waits).toContain("/proc/net/tcp");
    expect(starts).not.toContain("/proc/net/tcp");
    expect(starts.trim().split("\n").at(-1)).toBe('exec "$@"');
  });
});

describe("the bridge in a real sandbox", () => {
  let dir: string;
  let sandbox: Sandbox;
  let upstream: http.Server;
  let upstreamUrl: URL;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "tether-bridge-"));
    sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(dir, "state"), log });
    upstream = http.createServer((_req, res) => res.end("model says hi\n"));
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    const a = upstream.address() as { port: number };
    upstreamUrl = new URL(`http://127.0.0.1:${a.port}`);
  });
  afterAll(async () => {
    await new Promise((r) => upstream.close(r));
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Runs `script` in a sandbox with egress to the upstream; its stdout. */
  const run = async (script: string, waitForBridge: boolean) => {
    const ws = await fs.mkdtemp(path.join(dir, "ws-"));
    const p = await sandbox.prepare({
      workspace: ws,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
      egress: {
        model: {
          upstream: upstreamUrl,
          headers: {},
          strip: [],
          routes: [{ method: "GET", path: "/v1/ping" }],
          rules: [],
        },
        network: { kind: "model-only" },
        waitForBridge,
      },
      command: ["/bin/sh", "-c", script],
    });
    try {
      const r = await execa(p.file, p.args, {
        env: p.env,
        extendEnv: false,
        cwd: p.cwd,
        // bwrap reads its seccomp program on fd 3.
        stdio: ["ignore", "pipe", "pipe", p.fd3 ?? "ignore"],
        reject: false,
        timeout: 60_000,
      });
      return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
    } finally {
      await p.dispose();
    }
  };

  it("by default, the command's first instruction finds the bridge listening", async () => {
    expect(sandbox.status.detail).toMatch(/^bubblewrap/); // .ci/run installs it
    // grep -q exits 1 if the listener (port 8088 = 1F98, state 0A) is not there yet.
    const r = await run("grep -q ':1F98 00000000:0000 0A' /proc/net/tcp && echo listening", true);
    expect(r.stdout).toBe("listening");
  });

  it("without the wait, the bridge comes up beside the command and carries its requests", async () => {
    expect(sandbox.sandboxed).toBe(true);
    const script = `
i=0
until grep -q ':1F98 00000000:0000 0A' /proc/net/tcp; do
  i=$((i + 1)); [ "$i" -lt 2000 ] || exit 9; sleep 0.01
done
exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/8088; printf "GET /v1/ping HTTP/1.0\\r\\n\\r\\n" >&3; cat <&3'`;
    const r = await run(script, false);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^HTTP\/1\.[01] 200/);
    expect(r.stdout).toContain("model says hi");
  });
});
