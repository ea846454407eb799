/**
 * GitHub requests per turn, by kind of turn (#34, "a request budget per turn"): a first turn, a
 * follow-up that publishes nothing, and a follow-up that publishes (the agent writes a file: a
 * push and a draft pull request). The built app as a process, real Postgres, the real Claude
 * CLI against the fake Messages API, the GitHub stand-in over HTTP, one turn at a time.
 *
 *   npx tsx bench/github-requests.ts [rounds=3]
 *
 * Per kind it prints the requests the stand-in logged, split by who made them: the turn's own
 * client (REST with the runner's thread token, test/helpers/turn-requests.ts), intake and
 * tokens (REST with intake's installation token or the app's JWT), and git (fetch, push). And
 * beside the turn client's count, Tether's own (tasks.github_requests, counted by the request
 * policy's hook): the two must agree on every turn, and the bench says whether they did.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { startStack, REPO, type Stack } from "../test/helpers/e2e-stack.js";
import { replies } from "../test/helpers/fake-anthropic.js";
import type { RecordedRequest } from "../test/helpers/fake-github.js";
import { lastSeq, turnRequests } from "../test/helpers/turn-requests.js";
import { benchDatabase, median } from "./support.js";

const rounds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 3);
const ROOT = path.resolve(import.meta.dirname, "..");
if (process.env.BENCH_BUILD !== "0") {
  console.log("building dist (npm run build) …");
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
}

const KINDS = ["first turn", "follow-up", "publishing follow-up"] as const;
type Kind = (typeof KINDS)[number];
interface Turn {
  standIn: number;
  tether: number | null;
  other: number;
  git: number;
  routes: string[];
}

async function oneTurn(stack: Stack, issue: number, body: string): Promise<Turn> {
  const from = lastSeq(stack.gh);
  const task = await stack.finishedTask(await stack.comment(issue, body), 300_000);
  if (task.status !== "succeeded") throw new Error(`turn failed: ${JSON.stringify(task)}`);
  const all = stack.gh.requests.filter((r) => r.seq > from);
  const own = new Set<RecordedRequest>(turnRequests(stack.gh, from));
  return {
    standIn: own.size,
    tether: task.github_requests as number | null,
    other: all.filter((r) => r.kind === "rest" && !own.has(r)).length,
    git: all.filter((r) => r.kind === "git").length,
    routes: [...own].map((r) => r.route ?? `${r.method} ${r.path}`),
  };
}

const db = await benchDatabase();
const pool = createPool(db.url);
const stack = await startStack({
  pool,
  databaseUrl: db.url,
  config: "agents:\n  tether:\n    model: claude-sonnet-4-5\n",
  env: { LOG_LEVEL: "warn" },
});
const turns = new Map<Kind, Turn[]>(KINDS.map((k) => [k, []]));
try {
  for (let i = 0; i < rounds; i++) {
    const issue = stack.gh.addIssue({
      repo: REPO,
      title: `requests ${i}`,
      body: "Count me.",
      user: "alice",
    }).number as number;
    turns.get("first turn")!.push(await oneTurn(stack, issue, `@tether first turn ${i}`));
    turns.get("follow-up")!.push(await oneTurn(stack, issue, `@tether follow-up ${i}`));
    stack.api.script(
      replies.toolUse("Write", { file_path: `/workspace/notes-${i}.md`, content: `note ${i}\n` }),
      replies.text("Wrote the note."),
    );
    turns
      .get("publishing follow-up")!
      .push(await oneTurn(stack, issue, `@tether write a note ${i}`));
  }
} finally {
  await stack.close();
  await pool.end();
  await db.cleanup();
}

console.log(`\nGitHub requests per turn, median of ${rounds} (one turn at a time)`);
console.log(
  `${"kind".padEnd(22)} ${"turn client".padStart(11)} ${"Tether".padStart(7)} ${"intake+tokens".padStart(13)} ${"git".padStart(4)}`,
);
let agree = true;
for (const [kind, ts] of turns) {
  for (const t of ts) if (t.tether !== t.standIn) agree = false;
  console.log(
    `${kind.padEnd(22)} ${String(median(ts.map((t) => t.standIn))).padStart(11)} ${String(median(ts.map((t) => t.tether ?? NaN))).padStart(7)} ${String(median(ts.map((t) => t.other))).padStart(13)} ${String(median(ts.map((t) => t.git))).padStart(4)}`,
  );
}
console.log(
  agree
    ? "Tether's count (tasks.github_requests) equals the stand-in's on every turn."
    : `Tether's count and the stand-in's DISAGREE: ${JSON.stringify([...turns].map(([k, ts]) => [k, ts.map((t) => [t.tether, t.standIn])]))}`,
);
for (const [kind, ts] of turns) {
  const counts = new Map<string, number>();
  for (const r of ts[0]?.routes ?? []) counts.set(r, (counts.get(r) ?? 0) + 1);
  console.log(
    `\n${kind}, the turn client's requests (round 1):\n  ${[...counts].map(([r, n]) => `${r} ×${n}`).join("\n  ")}`,
  );
}
if (!agree) process.exitCode = 1;
