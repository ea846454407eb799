/**
 * The app installed on repositories (`installation.created`, `installation_repositories.added`;
 * GitHub sends these to every app, subscribed or not): their schedules are to be read
 * (src/intake/scheduler.ts). Recorded at once in the webhook handler, two statements a
 * repository, no GitHub call; the scheduler's next sweep reads them.
 */
import { z } from "zod";
import type { Queryable } from "../sql/db.js";
import { wantScheduleSync } from "../sql/schedules.js";
import { noteRepoName } from "../sql/repo-names.js";

export const INSTALLATION_EVENTS = ["installation", "installation_repositories"] as const;

const Repo = z.object({
  id: z.number().int().positive(),
  full_name: z.string().regex(/^[^/\s]+\/[^/\s]+$/),
});
const InstallationEvent = z.object({
  action: z.string(),
  installation: z.object({ id: z.number().int().positive() }),
  repositories: z.array(Repo).optional(),
  repositories_added: z.array(Repo).optional(),
});

/** Pure: the repositories an installation event adds, or why none. */
export function installedRepos(
  name: string,
  payload: unknown,
): { installationId: number; repos: Array<{ id: number; fullName: string }> } | { ignore: string } {
  const read = InstallationEvent.safeParse(payload);
  if (!read.success) return { ignore: `unexpected ${name} payload` };
  const e = read.data;
  const list =
    name === "installation" && e.action === "created"
      ? e.repositories
      : name === "installation_repositories" && e.action === "added"
        ? e.repositories_added
        : undefined;
  if (!list?.length) return { ignore: `${name}.${e.action} adds no repository` };
  return {
    installationId: e.installation.id,
    repos: list.map((r) => ({ id: r.id, fullName: r.full_name.toLowerCase() })),
  };
}

/** Ask for the schedules of each repository the event adds. Returns what was done, for the log. */
export async function takeInstallation(
  db: Queryable,
  name: string,
  payload: unknown,
): Promise<{ recorded: string } | { ignore: string }> {
  const r = installedRepos(name, payload);
  if ("ignore" in r) return r;
  for (const repo of r.repos.slice(0, 1000)) {
    // A repository new under an old name starts with nothing kept for the old one (repo-names.ts).
    await noteRepoName(db, repo.fullName, repo.id);
    await wantScheduleSync(db, {
      repoId: repo.id,
      installationId: r.installationId,
      repo: repo.fullName,
    });
  }
  return { recorded: `installed on ${r.repos.length} repositories: their schedules are read` };
}
