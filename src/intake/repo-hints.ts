/**
 * What intake learnt of a repository's config the last time it read it: the mentions its agents
 * answer to and its allow-listed users. Used to guess, before this comment's config read returns,
 * whether the comment addresses an agent and will need the author's permission; if so intake
 * asks GitHub for both at once (one round trip instead of two). Likewise, a repository that had
 * no config file of its own gets the org's `.github` file asked for alongside its own. A wrong guess costs one unused
 * permission request or one round trip, never a decision: access is always decided on the
 * config just read. A repository not seen since the process started gets no guess.
 */
export class RepoHints {
  private readonly byRepo = new Map<
    string,
    { mentions: Set<string>; allowUsers: Set<string>; repoFile: boolean }
  >();

  constructor(private readonly maxRepos = 10_000) {}

  /**
   * Record what the repository's config says: agent mentions (`@name`), allowed users, and
   * whether the repository has a file of its own (else the org's applied, or none).
   */
  remember(
    repo: string,
    seen: { mentions: Iterable<string>; allowUsers: Iterable<string>; repoFile: boolean },
  ): void {
    const norm = (xs: Iterable<string>) =>
      new Set([...xs].map((x) => x.replace(/^@/, "").toLowerCase()));
    this.byRepo.delete(repo); // re-inserted last: the map's order is least recently read first
    this.byRepo.set(repo, {
      mentions: norm(seen.mentions),
      allowUsers: norm(seen.allowUsers),
      repoFile: seen.repoFile,
    });
    if (this.byRepo.size > this.maxRepos) {
      const oldest = this.byRepo.keys().next().value;
      if (oldest !== undefined) this.byRepo.delete(oldest);
    }
  }

  /**
   * Whether a comment by `login` mentioning `names` (without `@`) will likely need `login`'s
   * permission: it mentions one of the repository's agents and `login` is not allow-listed.
   */
  permissionLikelyNeeded(repo: string, names: readonly string[], login: string): boolean {
    const known = this.byRepo.get(repo);
    if (!known || known.allowUsers.has(login.toLowerCase())) return false;
    return names.some((n) => known.mentions.has(n.toLowerCase()));
  }

  /** Whether the repository had no config file of its own when last read. */
  orgFileLikely(repo: string): boolean {
    const known = this.byRepo.get(repo);
    return known !== undefined && !known.repoFile;
  }
}
