/**
 * A push to a repository's default branch may change its `.github/tether.yml`, or, for an
 * organisation's `.github` repository, the default every repository of the organisation reads.
 * The config's answers are pinned (src/github/conditional-requests.ts): served without asking
 * GitHub until such a push. So the push is recorded at once, in the webhook handler (one
 * statement, no GitHub call, no inbox row): the next config read of that repository asks GitHub
 * again, conditionally, and a push that did not touch the file costs a free 304.
 *
 * The same push asks for the repository's schedules to be read again (src/intake/scheduler.ts).
 *
 * Pushes to other branches change nothing the config reads, and are ignored.
 */
import { z } from "zod";
import type { Queryable } from "../sql/db.js";
import { recordPush } from "../sql/github-cache.js";
import { noteRepoName } from "../sql/repo-names.js";
import { wantScheduleSync } from "../sql/schedules.js";

export const PUSH_EVENT = "push";

const PushEvent = z.object({
  ref: z.string().min(1),
  repository: z.object({
    id: z.number().int().positive().optional(),
    full_name: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
    default_branch: z.string().min(1),
  }),
  installation: z.object({ id: z.number().int().positive() }).optional(),
});

/** What a push says about pinned answers: the scope to ask again, or why nothing. */
export function pushScope(
  payload: unknown,
): { scope: string; repoId?: number; installationId?: number } | { ignore: string } {
  const read = PushEvent.safeParse(payload);
  if (!read.success) {
    const first = read.error.issues[0];
    return {
      ignore: `unexpected push payload: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "invalid"}`,
    };
  }
  const { ref, repository: r } = read.data;
  if (ref !== `refs/heads/${r.default_branch}`) return { ignore: "push to another branch" };
  return {
    scope: r.full_name.toLowerCase(),
    ...(r.id !== undefined ? { repoId: r.id } : {}),
    ...(read.data.installation ? { installationId: read.data.installation.id } : {}),
  };
}

/** Record the push, when it is to the default branch. Returns what was done, for the log. */
export async function takePush(
  db: Queryable,
  payload: unknown,
): Promise<{ recorded: string } | { ignore: string }> {
  const s = pushScope(payload);
  if ("ignore" in s) return s;
  // A repository new under the name first drops what was kept for the old one (repo-names.ts).
  if (s.repoId !== undefined) await noteRepoName(db, s.scope, s.repoId);
  await recordPush(db, s.scope);
  if (s.repoId !== undefined && s.installationId !== undefined)
    await wantScheduleSync(db, {
      repoId: s.repoId,
      installationId: s.installationId,
      repo: s.scope,
    });
  return { recorded: `push to ${s.scope}'s default branch: its config is asked again` };
}
