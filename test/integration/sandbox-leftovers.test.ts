/**
 * A runner restarted after a crash (#28, item 11): the killed process's sandboxes may still be
 * exiting and writing into their run directories while the new one starts. Start-up clears the
 * leftovers without ever failing over them: here a real process keeps creating files and
 * directories in a leftover run directory while Sandbox.start runs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

const log = createLogger(process.env.TETHER_TEST_LOG ?? "silent");
const writers: ChildProcess[] = [];
const FAST = { attempts: 3, delayMs: 10 };

afterEach(async () => {
  for (const w of writers.splice(0)) await stop(w);
});

/** A process that writes into `dir` until killed, as a dying sandbox's CLI does. */
async function startWriter(dir: string): Promise<ChildProcess> {
  // Files and nested directories, as fast as a shell can make them: whatever a sweep lists, there
  // is soon more. It works in the directory (its cwd), as a sandbox's process does through its
  // binds: a rename does not stop it, and once the directory is removed its writes fail.
  const script = `cd "$D" || exit 1; i=0; while :; do i=$((i+1)); mkdir home/d$i 2>/dev/null && : > home/d$i/f 2>/dev/null; : > f$i 2>/dev/null; done`;
  const w = spawn("/bin/sh", ["-c", script], { env: { D: dir, PATH: "/usr/bin:/bin" } });
  writers.push(w);
  // Started writing: wait for its first files (an event, not a sleep).
  for (let n = 0; fs.readdirSync(dir).length < 3; n++) {
    if (n > 10_000) throw new Error("the writer never wrote");
    await new Promise((r) => setTimeout(r, 5));
  }
  return w;
}

async function stop(w: ChildProcess): Promise<void> {
  if (w.exitCode !== null || w.signalCode !== null) return;
  const gone = new Promise((r) => w.once("exit", r));
  w.kill("SIGKILL");
  await gone;
}

describe("Sandbox.start over a crashed runner's leftovers", () => {
  it("starts while a leftover run directory is still being written to, and clears it after", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-leftovers-"));
    const runs = path.join(stateDir, "runs");
    const leftovers = ["0123456789abcdef", "fedcba9876543210", "probe-x1"].map((n) =>
      path.join(runs, n),
    );
    for (const d of leftovers) fs.mkdirSync(path.join(d, "home"), { recursive: true });
    // Two of the dead runner's sandboxes are still exiting, and writing as they go.
    const w1 = await startWriter(leftovers[0]!);
    const w2 = await startWriter(leftovers[1]!);

    // Several restarts in a row while they write: each must start.
    for (let i = 0; i < 5; i++) {
      const sandbox = await Sandbox.start({ mode: "off", stateDir, log, sweepRetry: FAST });
      expect(sandbox.status.ok).toBe(true);
      // What a new run makes starts in an empty runs directory of its own.
      expect(fs.readdirSync(runs)).toEqual([]);
      await sandbox.swept;
    }

    // The dying processes finish; the next start (or this one's background sweep) takes the rest.
    await stop(w1);
    await stop(w2);
    const sandbox = await Sandbox.start({ mode: "off", stateDir, log });
    await sandbox.swept;
    expect(fs.readdirSync(runs)).toEqual([]);
    expect(fs.readdirSync(stateDir).sort()).toEqual(["runs"]);
  });

  it("logs, and does not fail, when a leftover cannot be removed", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-leftovers-"));
    const runs = path.join(stateDir, "runs");
    fs.mkdirSync(path.join(runs, "aaaaaaaaaaaaaaaa", "home"), { recursive: true });
    const lines: Record<string, unknown>[] = [];
    const captured = createLogger("debug", {
      write: (s: string) => {
        lines.push(JSON.parse(s) as Record<string, unknown>);
        return true;
      },
    });
    // A writer that always wins the race: every removal fails as rmdir does then.
    let tries = 0;
    const sandbox = await Sandbox.start({
      mode: "off",
      stateDir,
      log: captured,
      sweepRetry: { attempts: 3, delayMs: 1 },
      sweepRemove: async (dir) => {
        tries++;
        throw Object.assign(new Error(`ENOTEMPTY: directory not empty, rmdir '${dir}'`), {
          code: "ENOTEMPTY",
        });
      },
    });
    expect(sandbox.status.ok).toBe(true);
    expect(fs.readdirSync(runs)).toEqual([]);
    await sandbox.swept;
    expect(tries).toBe(3);
    const warned = lines.find((l) => String(l.msg).includes("could not remove"));
    expect(warned).toMatchObject({ attempts: 3 });
    expect(String(warned?.err)).toContain("ENOTEMPTY");
    // The next start takes what is left.
    const again = await Sandbox.start({ mode: "off", stateDir, log });
    await again.swept;
    expect(fs.readdirSync(stateDir).sort()).toEqual(["runs"]);
  });
});
