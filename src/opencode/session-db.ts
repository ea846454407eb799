/**
 * Where opencode keeps a session, for the session store (postgres-transcripts.ts). opencode
 * 1.18 keeps every session of a HOME in one SQLite database,
 * `$HOME/.local/share/opencode/opencode.db`, in WAL mode, and exits without checkpointing it:
 * after a run the database file holds little and `opencode.db-wal` holds the rest
 * (docs/opencode-cli-facts.md, "Where sessions live"). Every turn gets a fresh HOME, so the
 * database a turn leaves holds only its key's session; Tether folds the WAL into it
 * (checkpointWal, below, as SQLite's own checkpoint would) and keeps that one file as the
 * session's transcript. Restored into an empty HOME, the CLI resumes the session from it.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { TranscriptLayout } from "../agent-cli/session-layout.js";

/** `ses_` and 26 characters of opencode's identifier alphabet. */
export const SESSION_ID = /^ses_[0-9A-Za-z]{20,40}$/;

export const DB_NAME = "opencode.db";

/** The database's place in a HOME (XDG_DATA_HOME is not set in Tether's runs). */
export function dbPath(home: string): string {
  return path.join(home, ".local", "share", "opencode", DB_NAME);
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
/** A database this large is not a session's (the store's own bound is smaller still). */
const MAX_PAGES = 1 << 20;

/** SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing from s. */
function checksum(data: Buffer, s: [number, number], bigEndian: boolean): [number, number] {
  let [s0, s1] = s;
  for (let i = 0; i < data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/**
 * Folds a WAL's committed frames into the database file and removes the WAL and its index, as
 * a full SQLite checkpoint does. Frames are taken up to the last valid commit; a torn or foreign
 * tail (a killed writer, salts or checksums that do not match) is left out, as SQLite's recovery
 * leaves it. Returns how many frames were applied; 0 when there was no usable WAL.
 */
export async function checkpointWal(db: string): Promise<number> {
  const walPath = `${db}-wal`;
  const st = await fs.lstat(walPath).catch(() => null);
  if (!st) return 0;
  if (!st.isFile()) throw new Error(`${walPath} is not a regular file`);
  const wal = await fs.readFile(walPath);
  let applied = 0;
  if (wal.length >= WAL_HEADER) {
    const magic = wal.readUInt32BE(0);
    const pageSize = wal.readUInt32BE(8);
    const validPage = pageSize >= 512 && pageSize <= 65536 && (pageSize & (pageSize - 1)) === 0;
    if ((magic === 0x377f0682 || magic === 0x377f0683) && validPage) {
      const bigEndian = magic === 0x377f0683;
      const salt1 = wal.readUInt32BE(16);
      const salt2 = wal.readUInt32BE(20);
      let sum = checksum(wal.subarray(0, 24), [0, 0], bigEndian);
      if (sum[0] === wal.readUInt32BE(24) && sum[1] === wal.readUInt32BE(28)) {
        const frames: Array<{ page: number; at: number }> = [];
        let committed: { count: number; dbPages: number } | undefined;
        for (
          let at = WAL_HEADER;
          at + FRAME_HEADER + pageSize <= wal.length;
          at += FRAME_HEADER + pageSize
        ) {
          const page = wal.readUInt32BE(at);
          const dbPages = wal.readUInt32BE(at + 4);
          if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
          sum = checksum(wal.subarray(at, at + 8), sum, bigEndian);
          sum = checksum(
            wal.subarray(at + FRAME_HEADER, at + FRAME_HEADER + pageSize),
            sum,
            bigEndian,
          );
          if (sum[0] !== wal.readUInt32BE(at + 16) || sum[1] !== wal.readUInt32BE(at + 20)) break;
          if (page < 1 || page > MAX_PAGES || dbPages > MAX_PAGES) break;
          frames.push({ page, at: at + FRAME_HEADER });
          if (dbPages > 0) committed = { count: frames.length, dbPages };
        }
        if (committed) {
          const fh = await fs.open(db, "r+");
          try {
            for (const f of frames.slice(0, committed.count)) {
              if (f.page > committed.dbPages) continue;
              await fh.write(wal, f.at, pageSize, (f.page - 1) * pageSize);
            }
            await fh.truncate(committed.dbPages * pageSize);
          } finally {
            await fh.close();
          }
          applied = committed.count;
        }
      }
    }
  }
  await fs.rm(walPath, { force: true });
  await fs.rm(`${db}-shm`, { force: true });
  return applied;
}

/**
 * opencode's layout: one database a HOME, found when it holds the session (its id is stored as
 * text, so it is in the file's bytes), its WAL folded in first.
 */
export const opencodeLayout: TranscriptLayout = {
  async find(home, sessionId) {
    if (!SESSION_ID.test(sessionId)) return null;
    const file = dbPath(home);
    // Reached through no link: every directory on the way and the file itself.
    let dir = home;
    for (const part of [".local", "share", "opencode"]) {
      dir = path.join(dir, part);
      const st = await fs.lstat(dir).catch(() => null);
      if (!st?.isDirectory()) return null;
    }
    const st = await fs.lstat(file).catch(() => null);
    if (!st?.isFile()) return null;
    await checkpointWal(file);
    const bytes = await fs.readFile(file);
    if (!bytes.includes(Buffer.from(sessionId))) return null;
    return { file, name: DB_NAME, size: bytes.length };
  },
  place(home, _cwd, sessionId) {
    if (!SESSION_ID.test(sessionId)) throw new Error(`not an opencode session id: ${sessionId}`);
    return dbPath(home);
  },
  keepsName: false,
  legacy: async () => null,
};
