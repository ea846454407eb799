/**
 * Starts the embedded PostgreSQL in argv[2], logs in with the password from its file, stops it
 * and prints one JSON line of what it saw. test/integration/embedded-postgres.test.ts runs it as
 * an ordinary user (the suite itself runs as root in CI, where the server runs as postgres).
 */
import fs from "node:fs";
import os from "node:os";
import pg from "pg";
import { startEmbeddedPostgres } from "../../src/db/embedded.js";

const dataDir = process.argv[2]!;
const server = await startEmbeddedPostgres({ dataDir, settings: { fsync: "off" } });
const serverUid = fs.statSync(
  `/proc/${fs.readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0]}`,
).uid;
const c = new pg.Client({ connectionString: server.url });
await c.connect();
const { rows } = await c.query<{ d: string }>("select current_setting('data_directory') as d");
await c.end();
await server.stop();
process.stdout.write(
  JSON.stringify({
    uid: process.getuid!(),
    serverUid,
    dataDirectory: rows[0]!.d,
    passwordMode: fs.statSync(server.passwordFile).mode & 0o777,
    leftInTmp: fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`tether-pg-${process.pid}-`)),
  }) + "\n",
);
