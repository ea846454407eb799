import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import type { Logger } from "../log.js";

/**
 * The embedded PostgreSQL's password.
 *
 * It listens on 127.0.0.1, where every local process (an agent's shell among them) can reach
 * it, so its superuser's password is a secret: random, made at the first start, kept in a file
 * beside the cluster that only Tether's user may read (0600), and reused on every later start.
 * Clusters made before this (role `tether`, password `tether`) are moved to a random password
 * on their next start.
 */

/** What every embedded cluster made before random passwords has for its role `tether`. */
export const LEGACY_PASSWORD = "tether";

/** `<dataDir>.password`, beside the cluster and its lock (initdb wants the cluster dir empty). */
export function passwordFileFor(dataDir: string): string {
  return `${dataDir}.password`;
}

/** 32 characters of [A-Za-z0-9_-]: no URL escaping needed, 192 bits. */
export function newPassword(): string {
  return randomBytes(24).toString("base64url");
}

/**
 * A SCRAM-SHA-256 verifier for `password`, in the form PostgreSQL stores (RFC 5803). PostgreSQL
 * takes a verifier given as a password as it is, so the password itself never reaches the
 * server: a statement log, or the temporary file initdb reads, holds only this, which does not
 * let anyone log in.
 */
export function scramVerifier(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = 4096,
): string {
  // PostgreSQL runs SASLprep on the password; for the ASCII passwords made here that is NFKC.
  const salted = pbkdf2Sync(password.normalize("NFKC"), salt, iterations, 32, "sha256");
  const clientKey = createHmac("sha256", salted).update("Client Key").digest();
  const storedKey = createHash("sha256").update(clientKey).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

/**
 * The password in `file`, made (and written, flushed to disk) when the file is missing. Written
 * before the cluster is touched, so a crash at any point leaves a file that either the cluster
 * already takes or ensureRolePassword moves the cluster to.
 */
export async function loadOrCreatePassword(
  file: string,
  log?: Pick<Logger, "info" | "warn">,
): Promise<{ password: string; created: boolean }> {
  let text: string | undefined;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (text !== undefined) {
    const password = text.split("\n")[0]!.trim();
    if (!password)
      throw new Error(
        `The embedded PostgreSQL's password file ${file} is empty. Write the password of its role tether ` +
          `into it, or, if the cluster beside it is new or disposable, delete both and start again.`,
      );
    const { mode } = await fs.stat(file);
    if ((mode & 0o077) !== 0) {
      await fs.chmod(file, 0o600);
      log?.warn(
        { passwordFile: file, mode: `0${(mode & 0o777).toString(8)}` },
        "the embedded PostgreSQL's password file was readable by others; made it 0600",
      );
    }
    return { password, created: false };
  }
  const password = newPassword();
  const tmp = `${file}.new-${process.pid}-${randomBytes(4).toString("hex")}`;
  const handle = await fs.open(tmp, "wx", 0o600);
  try {
    await handle.writeFile(`${password}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(tmp, file);
  } finally {
    await fs.rm(tmp, { force: true });
  }
  await syncDir(path.dirname(file));
  log?.info(
    { passwordFile: file },
    "made a random password for the embedded PostgreSQL (role tether), kept in this file",
  );
  return { password, created: true };
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface RolePasswordOptions {
  port: number;
  user: string;
  /** The password from the password file. */
  password: string;
  passwordFile: string;
  dataDir: string;
  log?: Pick<Logger, "info" | "warn">;
}

/**
 * Make sure the running cluster takes the file's password. A cluster that takes the old fixed
 * one instead is moved to the file's (ALTER ROLE with a verifier); one that takes neither is an
 * error that says where the password belongs.
 */
export async function ensureRolePassword(opts: RolePasswordOptions): Promise<void> {
  const first = await login(opts.port, opts.user, opts.password);
  if (first.ok) return await first.client.end();
  if (first.code !== "28P01") throw first.error;
  const legacy = await login(opts.port, opts.user, LEGACY_PASSWORD);
  if (!legacy.ok) {
    throw new Error(
      `The embedded PostgreSQL in ${opts.dataDir} refused the password in ${opts.passwordFile} for its role ` +
        `${opts.user}. If you changed that role's password, write it into ${opts.passwordFile} (one line, mode 0600).`,
    );
  }
  try {
    const c = legacy.client;
    await c.query(
      `ALTER ROLE ${c.escapeIdentifier(opts.user)} PASSWORD ${c.escapeLiteral(scramVerifier(opts.password))}`,
    );
  } finally {
    await legacy.client.end();
  }
  const check = await login(opts.port, opts.user, opts.password);
  if (!check.ok) throw check.error;
  await check.client.end();
  opts.log?.info(
    { passwordFile: opts.passwordFile, dataDir: opts.dataDir },
    "the embedded PostgreSQL had the old fixed password; its role tether now has the random one in the password file",
  );
}

type Login =
  { ok: true; client: pg.Client } | { ok: false; code: string | undefined; error: Error };

async function login(port: number, user: string, password: string): Promise<Login> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port,
    user,
    password,
    database: "postgres",
    connectionTimeoutMillis: 10_000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return { ok: true, client };
  } catch (err) {
    await client.end().catch(() => {});
    const error = err instanceof Error ? err : new Error(String(err));
    return { ok: false, code: (err as { code?: string }).code, error };
  }
}
