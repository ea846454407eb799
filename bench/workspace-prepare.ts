/**
 * What preparing a workspace costs a turn, against the local GitHub stand-in (loopback HTTP,
 * real git): a first clone, a later turn with nothing new, a later turn that fast-forwards.
 * Also counts the git processes each path starts (from the workspace's "git" debug lines).
 *
 *   npx tsx bench/workspace-prepare.ts [files=200] [rounds=20]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { cloneUrlFor } from "../src/github/git-auth.js";
import { createLogger } from "../src/log.js";
import { prepareWorkspace } from "../src/runner/workspace.js";
import { startFakeGitHub } from "../test/helpers/fake-github.js";

const files = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 20);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function report(name: string, ms: number[], processes: number[]): void {
  const s = [...ms].sort((a, b) => a - b);
  const p = [...new Set(processes)].sort((a, b) => a - b).join("/");
  console.log(
    `${name.padEnd(24)} n=${String(s.length).padStart(3)}  p50=${pct(s, 50).toFixed(1)} ms  p99=${pct(s, 99).toFixed(1)} ms  max=${(s.at(-1) ?? 0).toFixed(1)} ms  git processes=${p}`,
  );
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
    let gitLines = 0;
    const log = createLogger("debug", {
      write: (line: string) => {
        if (line.includes('"msg":"git"')) gitLines += 1;
      },
    });
    const base = {
      root: path.join(scratch, "ws"),
      repo: "octo/bench",
      agent: "tether",
      cloneUrl: cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, "octo/bench"),
      token,
      log,
    };
    const paths = { clone: [] as number[], noop: [] as number[], ff: [] as number[] };
    const processes = { clone: [] as number[], noop: [] as number[], ff: [] as number[] };
    const time = async (path: keyof typeof paths, fn: () => Promise<unknown>) => {
      gitLines = 0;
      const t = performance.now();
      await fn();
      paths[path].push(performance.now() - t);
      processes[path].push(gitLines);
    };
    for (let r = 0; r < rounds; r++) {
      const key = { ...base, issueNumber: r + 1 };
      await time("clone", () => prepareWorkspace(key));
      await time("noop", () => prepareWorkspace(key));
      await gh.commit("octo/bench", {
        files: { [`src/dir0/file0.ts`]: `export const round = ${r};\n` },
      });
      await time("ff", () => prepareWorkspace(key));
    }
    const { clone, noop } = paths;
    console.log(`repository: ${files} files; ${rounds} keys, 3 turns each`);
    report("first turn (clone)", clone, processes.clone);
    report("later turn, up to date", noop, processes.noop);
    report("later turn, fast-forward", paths.ff, processes.ff);
    console.log(
      `ratio later/first (p50): ${(
        pct(
          [...noop].sort((a, b) => a - b),
          50,
        ) /
        pct(
          [...clone].sort((a, b) => a - b),
          50,
        )
      ).toFixed(2)}`,
    );
  } finally {
    await gh.close();
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

await main();
