import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * A session can only be resumed where its file lives: on this host, in the default CLI's store
 * in $HOME (its registry entry's `homeStore`), by a compatible binary. So the derived id hashes
 * exactly those. Containers get a new hostname on every start: set TETHER_RUNTIME_ID (and keep
 * that store on a volume) to keep sessions.
 */
export function deriveRuntimeId(opts: {
  configured?: string;
  home: string;
  /** The default CLI's store in `home`, and its binary. */
  homeStore: string;
  cliPath: string;
  hostname?: string;
}): string {
  if (opts.configured) return opts.configured;
  const host = opts.hostname ?? os.hostname();
  const store = real(path.join(opts.home, opts.homeStore));
  const binary = real(opts.cliPath);
  const digest = createHash("sha256")
    .update(`${host}\0${store}\0${binary}`)
    .digest("hex")
    .slice(0, 12);
  return `${host.replace(/[^\w.-]/g, "_").slice(0, 60)}-${digest}`;
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}
