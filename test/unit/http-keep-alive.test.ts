import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, expect, it } from "vitest";
import { KEEP_ALIVE_TIMEOUT_MS, limitSlowClients } from "../../src/web/http.js";

const server = limitSlowClients(http.createServer((_req, res) => res.end("ok")));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const port = (server.address() as AddressInfo).port;
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function get(agent: http.Agent): Promise<{ socket: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ socket: req.socket }));
    });
    req.on("error", reject);
  });
}

// Node's default (5 s) closes an idle connection while a client may be sending on it: the
// client's request fails with "other side closed". The server must outwait its clients.
it("keeps an idle connection open longer than clients and proxies keep theirs", async () => {
  expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);
  expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000); // a load balancer's usual idle timeout
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await get(agent);
    await new Promise((r) => setTimeout(r, 5_500)); // past Node's default
    const second = await get(agent);
    expect(second.socket).toBe(first.socket); // the same connection, still open
  } finally {
    agent.destroy();
  }
}, 30_000);
