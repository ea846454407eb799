import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

/** Where a web process keeps the dashboard token it made, inside TETHER_DATA_DIR. */
export const DASHBOARD_TOKEN_FILE = "dashboard-token";

export interface DashboardToken {
  token: string;
  /** The file it was read from or written to. */
  file: string;
  /** What start-up did: made the file now, read it, or read it and took its mode back to 0600. */
  state: "created" | "read" | "tightened";
}

export class DashboardTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DashboardTokenError";
  }
}

/** What a token in the file may be: printable ASCII without spaces, as a bearer header carries it. */
const TOKEN_SHAPE = /^[\x21-\x7e]{16,512}$/;

/**
 * The dashboard token when TETHER_DASHBOARD_TOKEN is unset: made once, at the first start, as
 * 32 random bytes (base64url), and kept in `<dataDir>/dashboard-token` with mode 0600 so later
 * starts (and the operator, who reads it from there) get the same one. The file appears whole
 * or not at all: it is written under a temporary name and linked into place, which fails if
 * another process starting at the same time got there first; then that one's token is read.
 */
export async function ensureDashboardToken(dataDir: string): Promise<DashboardToken> {
  const file = path.join(dataDir, DASHBOARD_TOKEN_FILE);
  const existing = await readToken(file);
  if (existing) return existing;
  const token = randomBytes(32).toString("base64url");
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(tmp, `${token}\n`, { mode: 0o600, flag: "wx" });
    await fs.link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new DashboardTokenError(
        `Could not write the dashboard token to ${file}: ${(err as Error).message}. ` +
          "Make TETHER_DATA_DIR writable, or set TETHER_DASHBOARD_TOKEN.",
      );
    }
    const theirs = await readToken(file);
    if (theirs) return theirs;
    throw new DashboardTokenError(`${file} appeared while Tether was writing it, but is empty.`);
  } finally {
    await fs.rm(tmp, { force: true }).catch(() => undefined); // never made, or not makeable
  }
  return { token, file, state: "created" };
}

async function readToken(file: string): Promise<DashboardToken | undefined> {
  let text: string;
  let mode: number;
  try {
    mode = (await fs.stat(file)).mode;
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    // Not there, or a path whose parent is not a directory: no token yet (making one will say
    // what is wrong with the directory).
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw new DashboardTokenError(
      `Could not read the dashboard token from ${file}: ${(err as Error).message}. ` +
        "Fix its permissions, delete it to make a new one, or set TETHER_DASHBOARD_TOKEN.",
    );
  }
  const token = text.trim();
  if (!TOKEN_SHAPE.test(token)) {
    // Never quote the content: it may be a token with a stray character.
    throw new DashboardTokenError(
      `${file} does not hold a dashboard token (16-512 printable characters, no spaces). ` +
        "Delete it to make a new one, or set TETHER_DASHBOARD_TOKEN.",
    );
  }
  if ((mode & 0o077) !== 0) {
    await fs.chmod(file, 0o600);
    return { token, file, state: "tightened" };
  }
  return { token, file, state: "read" };
}
