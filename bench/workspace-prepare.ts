/**
 * What preparing a workspace costs a turn, against the local GitHub stand-in (loopback HTTP,
 * real git): a first clone, a later turn with nothing new, a later turn that fast-forwards.
 * Each round runs the same three turns with the workspace's git in the sandbox (the default)
 * and unsandboxed (TETHER_SANDBOX=off), interleaved, so the sandbox's cost is read side by side.
 * Also counts the steps each path takes: host git processes (the mirror) and sandboxes.
 *
 *   npx tsx bench/workspace-prepare.ts [files=200] [rounds=20]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { cloneUrlFor } from "../src/github/git-auth.js";
import { createLogger } from "../src/log.js";
import { Sandbox } from "../src/sandbox/sandbox.js";
import { Workspaces } from "../src/workspace/workspace.js";
import { startFakeGitHub } from "../test/helpers/fake-github.js";
import { repoIdOf } from "../test/helpers/seed.js";

const files = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 20);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function report(name: string, ms: number[], processes: number[]): number {
  const s = [...ms].sort((a, b) => a - b);
  const p = [...new Set(processes)].sort((a, b) => a - b).join("/");
  console.log(
    `${name.padEnd(36)} n=${String(s.length).padStart(3)}  p50=${pct(s, 50).toFixed(1)} ms  p99=${pct(s, 99).toFixed(1)} ms  max=${(s.at(-1) ?? 0).toFixed(1)} ms  steps=${p}`,
  );
  return pct(s, 50);
}

async function main(): Promise<void> {
  const gh = await startFakeGitHub();
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-bench-ws-"));
  try {
    const content: Record<string, string> = {};
    for (let i = 0; i < files; i++)
      content[`src/dir${i % 20}/file${i}.ts`] = `export const x${i} = ${i};\n`.repeat(20);
    await gh.addRepo({ owner: "octo", name: "bench", files: content });
    const token = gh.createInstallationToken();
    let steps = 0;
    const log = createLogger("debug", {
      write: (line: string) => {
        if (line.includes('"msg":"git"') || line.includes('"msg":"git in the workspace"'))
          steps += 1;
      },
    });
    const modes = ["bwrap", "off"] as const;
    const spaces = new Map<string, Workspaces>();
    for (const mode of modes) {
      const sandbox = await Sandbox.start({
        mode,
        stateDir: path.join(scratch, `sb-${mode}`),
        log,
      });
      if (!sandbox.status.ok) throw new Error(`sandbox ${mode}: ${sandbox.status.detail}`);
      spaces.set(
        mode,
        await Workspaces.open({ root: path.join(scratch, `ws-${mode}`), sandbox, log }),
      );
    }
    const cloneUrl = cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, "octo/bench");
    const kinds = ["clone", "noop", "ff"] as const;
    const ms = new Map<string, number[]>();
    const counted = new Map<string, number[]>();
    const time = async (name: string, fn: () => Promise<unknown>) => {
      steps = 0;
      const t = performance.now();
      await fn();
      (ms.get(name) ?? ms.set(name, []).get(name)!).push(performance.now() - t);
      (counted.get(name) ?? counted.set(name, []).get(name)!).push(steps);
    };
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 ? [...modes].reverse() : modes) {
        const w = spaces.get(mode)!;
        const req = {
          repoId: repoIdOf("octo/bench"),
          repo: "octo/bench",
          agent: "tether",
          issueNumber: r + 1,
          cloneUrl,
          token,
        };
        await time(`${mode} clone`, () => w.prepare(req));
        await time(`${mode} noop`, () => w.prepare(req));
        await gh.commit("octo/bench", {
          files: { [`src/dir0/file0.ts`]: `export const round = ${r}${mode};\n` },
        });
        await time(`${mode} ff`, () => w.prepare(req));
      }
    }
    console.log(
      `repository: ${files} files; ${rounds} keys per mode, 3 turns each, modes interleaved`,
    );
    const names = {
      clone: "first turn (clone)",
      noop: "later turn, up to date",
      ff: "later turn, fast-forward",
    };
    for (const kind of kinds) {
      const a = report(
        `${names[kind]}, sandboxed`,
        ms.get(`bwrap ${kind}`)!,
        counted.get(`bwrap ${kind}`)!,
      );
      const b = report(
        `${names[kind]}, unsandboxed`,
        ms.get(`off ${kind}`)!,
        counted.get(`off ${kind}`)!,
      );
      console.log(
        `${"".padEnd(36)} sandbox adds ${(a - b).toFixed(1)} ms at the median (${(a / b).toFixed(2)}×)`,
      );
    }
  } finally {
    await gh.close();
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

await main();
