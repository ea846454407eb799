/**
 * A server on a unix socket that a sandbox binds in (the egress proxy's, an MCP server's host):
 * the file a stopped run left at the path is replaced, and closing removes it.
 */
import fs from "node:fs/promises";
import type net from "node:net";

/** Listen on `socketPath`, replacing a file left there; rejects when listening fails. */
export async function listenOnSocket(server: net.Server, socketPath: string): Promise<void> {
  await fs.rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** Close the server and remove its socket file. */
export async function closeSocket(server: net.Server, socketPath: string): Promise<void> {
  await new Promise<void>((r) => server.close(() => r()));
  await fs.rm(socketPath, { force: true });
}
