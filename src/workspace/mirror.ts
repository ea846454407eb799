/**
 * One bare mirror per repository, written by Tether alone: the only git repository that talks
 * to GitHub with the installation token. Workspaces clone and fetch from it inside their
 * sandbox (it is bound there read-only as their `origin`), so the token never comes near a
 * checkout the agent can write, and a key's first turn copies a local repository instead of
 * cloning over the network.
 *
 * Layout: `<root>/<owner>/<name>.git` with GitHub's branches as `refs/heads/*`, and the heads of
 * pull requests a turn asked for as `refs/pull/<n>/head`. Fetches of one repository are
 * serialised in this process.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import type { FailureContext } from "./errors.js";
import type { HostGit } from "./git.js";
import { refFiles, type RefFiles } from "./git-refs.js";

export interface MirrorSync {
  /** Host path of the bare mirror. */
  dir: string;
  /** The branch GitHub's HEAD names. */
  defaultBranch: string;
  /** The commit of each ref asked for after the fetch (null: not in the mirror). */
  refs: Record<string, string | null>;
  /** False when the fetch was skipped: the mirror already had what `expect` named. */
  fetched: boolean;
}

/**
 * A mirror belongs to a repository by its id (a rename keeps it, a new repository under an old
 * name gets its own); the name is what git and the logs are given.
 */
export interface MirrorRepo {
  repoId: number;
  repo: string;
}

export interface SyncRequest extends MirrorRepo {
  cloneUrl: string;
  token: string;
  /** Also fetch this pull request's head into refs/pull/<n>/head. */
  pullRequest?: number | undefined;
  /** Refs whose commits to report (e.g. refs/heads/main). */
  report?: string[];
  /**
   * What GitHub said, just now, the refs the turn stands on point at (ref → commit; null: no
   * such ref). When the mirror already holds exactly these and this process fetched every
   * branch into it less than `freshMs` ago, the fetch is skipped: the turn's own refs are as
   * GitHub has them, and the mirror's other branches are at most that old.
   */
  expect?: Record<string, string | null> | undefined;
  signal?: AbortSignal | undefined;
}

/** How old the mirror's other branches may be when a turn skips the fetch (10 minutes). */
export const MIRROR_FRESH_MS = 10 * 60_000;

export class Mirrors {
  private readonly queues = new Map<number, Promise<unknown>>();
  /** When this process last started a fetch (or clone) of every branch that succeeded, per repo. */
  private readonly fetchedAt = new Map<number, number>();

  constructor(
    private readonly opts: {
      root: string;
      git: HostGit;
      log: Logger;
      timeoutMs?: number;
      /** See SyncRequest.expect. Default MIRROR_FRESH_MS; 0 never skips. */
      freshMs?: number;
    },
  ) {}

  /**
   * Whether a fetch could be skipped for this repository now (SyncRequest.expect): this process
   * fetched every branch of it less than `freshMs` ago. Lets a caller not ask GitHub in vain.
   */
  recentlyFetched(r: MirrorRepo): boolean {
    const at = this.fetchedAt.get(r.repoId);
    return at !== undefined && Date.now() - at < (this.opts.freshMs ?? MIRROR_FRESH_MS);
  }

  /** Tether's own git, for what publishing does in a mirror (src/publish/mirror-git.ts). */
  get git(): HostGit {
    return this.opts.git;
  }

  /**
   * Run `fn` while no fetch of this repository's mirror runs (and none starts), so what it
   * writes into the mirror and what a sync writes never cross.
   */
  exclusive<T>(r: MirrorRepo, fn: () => Promise<T>): Promise<T> {
    const key = r.repoId;
    const prev = this.queues.get(key) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.queues.set(key, next);
    const done = () => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    };
    next.then(done, done);
    return next;
  }

  /** Host path of a repository's mirror: `<root>/<repository id>.git`. */
  pathFor(repoId: number): string {
    if (!Number.isSafeInteger(repoId) || repoId < 1)
      throw new Error(
        `cannot make a mirror for repository id ${repoId}: not a GitHub repository id`,
      );
    return path.join(this.opts.root, `${repoId}.git`);
  }

  /** Create or fetch the mirror (serialised per repository), then read the refs asked for. */
  sync(req: SyncRequest): Promise<MirrorSync> {
    return this.exclusive(req, () => this.syncNow(req));
  }

  private async syncNow(req: SyncRequest): Promise<MirrorSync> {
    const dir = this.pathFor(req.repoId);
    const ctx: FailureContext = {
      repo: req.repo,
      host: new URL(req.cloneUrl).host,
      timeoutMs: this.opts.timeoutMs ?? 10 * 60_000,
      pullRequest: req.pullRequest,
    };
    const auth = { cloneUrl: req.cloneUrl, token: req.token };
    const pull = req.pullRequest
      ? [`+${pullRef(req.pullRequest)}:${pullRef(req.pullRequest)}`]
      : [];
    const exists = (await fs.stat(path.join(dir, "HEAD")).catch(() => null))?.isFile() ?? false;
    // The files answer without a process; git decides whenever they are odd (packed oddly, a
    // reftable repository). A reader caches packed-refs: one before the fetch, one after.
    const reader =
      (refs: RefFiles) =>
      async (name: string): Promise<string | null> => {
        const r = await refs.resolve(name);
        if (r) return r.sha;
        const v = await this.opts.git(["rev-parse", "--verify", "--quiet", `${name}^{commit}`], {
          cwd: dir,
          step: "fetch",
          ctx,
          allowFailure: true,
        });
        return v.exitCode === 0 ? v.stdout.trim() : null;
      };
    const holds = async (expect: Record<string, string | null>): Promise<boolean> => {
      const shaBefore = reader(refFiles(dir));
      for (const [name, sha] of Object.entries(expect)) {
        if ((await shaBefore(name)) !== sha) return false;
      }
      return true;
    };
    const key = req.repoId;
    const started = Date.now();
    let fetched = true;
    if (exists && req.expect && this.recentlyFetched(req) && (await holds(req.expect))) {
      fetched = false;
      this.opts.log.debug(
        { repo: req.repo, refs: Object.keys(req.expect) },
        "the mirror already has the turn's refs as GitHub has them: fetch skipped",
      );
    } else if (!exists) {
      await fs.mkdir(path.dirname(dir), { recursive: true });
      const tmp = `${dir}.${randomBytes(4).toString("hex")}.tmp`;
      try {
        // One negotiation for the branches and the pull request's head: clone honours extra
        // fetch refspecs given with --config, and fails like fetch on a missing pull ref.
        await this.opts.git(
          [
            "clone",
            "--bare",
            "--quiet",
            "--no-tags",
            ...pull.map((r) => `--config=remote.origin.fetch=${r}`),
            "--",
            req.cloneUrl,
            tmp,
          ],
          { cwd: path.dirname(dir), step: "clone", ctx, auth, signal: req.signal },
        );
        await fs.rename(tmp, dir).catch(async (err: NodeJS.ErrnoException) => {
          // Made meanwhile by another process on this directory: use that one.
          if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
          await fs.rm(tmp, { recursive: true, force: true });
        });
      } catch (err) {
        await fs.rm(tmp, { recursive: true, force: true });
        throw err;
      }
      if (pull.length) {
        // The clone wrote the refspec into config; later fetches name their refspecs themselves.
        await this.opts.git(["config", "--unset-all", "remote.origin.fetch"], {
          cwd: dir,
          step: "clone",
          ctx,
          allowFailure: true,
        });
      }
    } else {
      await this.opts.git(
        [
          "fetch",
          "--quiet",
          "--prune",
          "--no-tags",
          "--no-recurse-submodules",
          "--",
          req.cloneUrl,
          "+refs/heads/*:refs/heads/*",
          ...pull,
        ],
        { cwd: dir, step: "fetch", ctx, auth, signal: req.signal },
      );
    }
    if (fetched) this.fetchedAt.set(key, started);
    const refs = refFiles(dir);
    const shaOf = reader(refs);
    let defaultBranch = await headBranch(refs);
    if (defaultBranch === null || (await shaOf(`refs/heads/${defaultBranch}`)) === null) {
      // GitHub renamed the default branch (or HEAD is odd): ask it which one it is now.
      const r = await this.opts.git(["ls-remote", "--symref", "--", req.cloneUrl, "HEAD"], {
        cwd: dir,
        step: "fetch",
        ctx,
        auth,
        signal: req.signal,
      });
      const m = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(r.stdout);
      if (!m) throw new Error(`${req.repo} has no default branch on the server`);
      defaultBranch = m[1]!;
      await this.opts.git(["symbolic-ref", "HEAD", `refs/heads/${defaultBranch}`], {
        cwd: dir,
        step: "fetch",
        ctx,
      });
    }
    const out: Record<string, string | null> = {};
    for (const name of req.report ?? []) out[name] = await shaOf(name);
    return { dir, defaultBranch, refs: out, fetched };
  }

  /** git's housekeeping in a mirror, after turns. Never throws. */
  async maintain(r: MirrorRepo, signal?: AbortSignal): Promise<void> {
    const { repo } = r;
    const dir = this.pathFor(r.repoId);
    try {
      await this.opts.git(["gc", "--auto", "--quiet"], {
        cwd: dir,
        step: "maintain",
        ctx: { repo, host: "", timeoutMs: 600_000 },
        maintenance: true,
        signal,
      });
    } catch (err) {
      this.opts.log.warn({ repo, err: (err as Error).message }, "mirror housekeeping failed");
    }
  }
}

export function pullRef(n: number): string {
  // Outside refs/heads: a branch name can never collide with it, and prune never removes it.
  return `refs/pull/${n}/head`;
}

async function headBranch(refs: ReturnType<typeof refFiles>): Promise<string | null> {
  const head = await refs.read("HEAD");
  return head?.kind === "symref" && head.target.startsWith("refs/heads/")
    ? head.target.slice("refs/heads/".length)
    : null;
}
