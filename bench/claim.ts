/**
 * Claim throughput: N runners (default 4) drain T queued tasks (default 10,000) through the real
 * claim and finish statements, each runner with concurrency C, the "CLI" being a no-op. Prints
 * tasks/s and checks that no task was claimed twice.
 *
 *   npx tsx bench/claim.ts [tasks=10000] [runners=4] [concurrency=8] [rounds=3]
 */
import { createPool } from "../src/db/pool.js";
import { registerRuntime } from "../src/sql/runtimes.js";
import { claimTasks } from "../src/sql/tasks/claim.js";
import { finishTask } from "../src/sql/tasks/finish.js";
import { benchDatabase, median } from "./support.js";

const [tasks = 10_000, runners = 4, concurrency = 8, rounds = 3] = process.argv
  .slice(2)
  .map(Number);

const db = await benchDatabase();
const pool = createPool(db.url, { max: runners * 2 + 2 });
await registerRuntime(pool, {
  id: "bench",
  hostname: "bench",
  homeDir: "/",
  cliPath: "/bin/true",
  cliVersion: null,
  canResume: true,
  concurrency,
});

const rates: number[] = [];
let doubles = 0;
for (let round = 1; round <= rounds; round++) {
  await pool.query("TRUNCATE tasks CASCADE");
  // Distinct keys, so every task is claimable at once (the one-running-per-key rule is tested elsewhere).
  await pool.query(
    `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, trigger_author, trigger_url, trigger_body, created_at)
     SELECT 'bench/repo', 1, 1, g, 'tether', 'u', 'url', 'body', now() - make_interval(secs => $1 - g)
       FROM generate_series(1, $1) g`,
    [tasks],
  );
  const seen = new Set<number>();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: runners }, async (_, r) => {
      const id = `bench/host/${r}/x`;
      for (;;) {
        const claimed = await claimTasks(pool, id, "bench", concurrency);
        if (claimed.length === 0) return;
        for (const t of claimed) {
          if (seen.has(t.id)) doubles++;
          seen.add(t.id);
        }
        await Promise.all(
          claimed.map((t) =>
            finishTask(pool, t.id, id, {
              status: "succeeded",
              outcome: "success",
              failureReason: null,
              sessionId: null,
              usage: null,
              answer: { kind: "posted", commentId: t.id },
            }),
          ),
        );
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const done = (await pool.query(`SELECT count(*)::int AS n FROM tasks WHERE status = 'succeeded'`))
    .rows[0].n as number;
  const rate = tasks / secs;
  rates.push(rate);
  console.log(
    `round ${round}: ${tasks} tasks, ${runners} runners × ${concurrency} slots: ${secs.toFixed(2)} s, ${rate.toFixed(0)} tasks/s, finished ${done}, claimed twice ${doubles}`,
  );
}
console.log(
  `\nclaim throughput, median of ${rounds}: ${median(rates).toFixed(0)} tasks/s (target ≥ 1000); double claims: ${doubles} (target 0)`,
);
await pool.end();
await db.cleanup();
