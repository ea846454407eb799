/**
 * Workspace paths a CLI reads whatever its flags say (opencode imports plugins from
 * `.opencode/` and `opencode.json` with every "ignore the project" switch on: see
 * docs/opencode-cli-facts.md): hidden from it on every run, by the sandbox's masks. Without a
 * sandbox they cannot be hidden, so the run is refused while the checkout has one.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { Mask } from "../sandbox/sandbox.js";

export interface Hidden {
  masks: Mask[];
  /** Why the paths cannot be hidden (a link, or something that is neither file nor directory). */
  problem?: string;
}

/** Masks that hide each of `paths` (relative to `cwd`, top level) the checkout holds. */
export async function hiddenMasks(cwd: string, paths: readonly string[]): Promise<Hidden> {
  const masks: Mask[] = [];
  for (const p of paths) {
    const st = await fs.lstat(path.join(cwd, p)).catch(() => null);
    if (!st) continue;
    if (st.isSymbolicLink())
      return {
        masks,
        problem: `the checkout's ${p} is a symbolic link, which the sandbox cannot hide from the CLI`,
      };
    if (st.isDirectory()) masks.push({ path: p, kind: "dir", replacement: null });
    else if (st.isFile()) masks.push({ path: p, kind: "file", replacement: null });
    else return { masks, problem: `the checkout's ${p} is neither a file nor a directory` };
  }
  return { masks };
}

/** The run's masks: the pull request's, with the hidden paths hiding whatever those showed. */
export function withHidden(masks: Mask[] | undefined, hidden: Mask[]): Mask[] | undefined {
  if (!hidden.length) return masks;
  const taken = new Set(hidden.map((m) => m.path));
  return [...(masks ?? []).filter((m) => !taken.has(m.path)), ...hidden];
}
