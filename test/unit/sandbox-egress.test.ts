/**
 * The egress proxy, the only way out of a sandbox: which hosts a policy lets through, which
 * addresses no policy reaches, and the model API's credentials put on here, over the proxy's
 * real unix socket with real servers behind it.
 */
import fs from "node:fs/promises";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANTHROPIC_ROUTES } from "../../src/providers/anthropic/endpoint.js";
import { createLogger } from "../../src/log.js";
import { ANTHROPIC_RULES } from "../../src/providers/anthropic/model-call-rules.js";
import {
  hostAllowed,
  isForbiddenAddress,
  startEgress,
  type Egress,
  type EgressOptions,
  type NetworkPolicy,
} from "../../src/sandbox/egress.js";

const log = createLogger("silent");

describe("hostAllowed", () => {
  const hosts: NetworkPolicy = { kind: "hosts", hosts: ["registry.npmjs.org", "*.pypi.org"] };
  it.each<[NetworkPolicy, string, boolean]>([
    [{ kind: "model-only" }, "registry.npmjs.org", false],
    [{ kind: "open" }, "anything.example", true],
    [hosts, "registry.npmjs.org", true],
    [hosts, "REGISTRY.npmjs.org.", true],
    [hosts, "evil-registry.npmjs.org", false],
    [hosts, "registry.npmjs.org.evil.example", false],
    [hosts, "files.pypi.org", true],
    [hosts, "a.b.pypi.org", true],
    [hosts, "pypi.org", false],
    [hosts, "notpypi.org", false],
  ])("%j lets %s through: %s", (policy, host, allowed) => {
    expect(hostAllowed(policy, host)).toBe(allowed);
  });
});

describe("isForbiddenAddress", () => {
  it.each<[string, boolean]>([
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["10.1.2.3", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["172.32.0.1", false],
    ["192.168.1.1", true],
    ["169.254.169.254", true], // the cloud metadata endpoint
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["255.255.255.255", true],
    ["8.8.8.8", false],
    ["1.1.1.1", false],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd12:3456::1", true],
    ["::ffff:10.0.0.1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:8.8.8.8", false],
    ["64:ff9b::a00:1", true],
    ["2606:4700:4700::1111", false],
    ["not-an-address", true],
  ])("%s: %s", (address, forbidden) => {
    expect(isForbiddenAddress(address)).toBe(forbidden);
  });
});

describe("isForbiddenAddress: other spellings of a forbidden address (#28)", () => {
  // Each names loopback or a private network in a way a string match on the canonical form
  // misses; the check must read the address as bytes and look at the IPv4 address inside.
  it.each<[string, string]>([
    ["::127.0.0.1", "IPv4-compatible loopback, dotted"],
    ["::7f00:1", "IPv4-compatible loopback, hex"],
    ["::ffff:0:7f00:1", "IPv4-translated (SIIT) loopback"],
    ["::ffff:0:127.0.0.1", "IPv4-translated loopback, dotted"],
    ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
    ["::FFFF:7F00:0001", "IPv4-mapped loopback, upper case, zero-padded"],
    ["0000:0000:0000:0000:0000:ffff:7f00:0001", "IPv4-mapped loopback, written out in full"],
    ["0:0:0:0:0:ffff:a9fe:a9fe", "IPv4-mapped cloud metadata endpoint"],
    ["::ffff:c0a8:101", "IPv4-mapped 192.168.1.1, hex"],
    ["::10.0.0.1", "IPv4-compatible 10.0.0.1"],
    ["64:ff9b::127.0.0.1", "NAT64 loopback"],
    ["64:ff9b::7f00:1", "NAT64 loopback, hex"],
    ["64:ff9b:1::a9fe:a9fe", "local-use NAT64 (RFC 8215) metadata endpoint"],
    ["2002:7f00:1::", "6to4 around loopback"],
    ["2002:c0a8:101::1", "6to4 around 192.168.1.1"],
    ["0:0:0:0:0:0:0:1", "loopback written out"],
    ["0000:0000:0000:0000:0000:0000:0000:0001", "loopback zero-padded"],
    ["FE80::1", "link-local, upper case"],
    ["fe80::1%eth0", "link-local with a zone"],
    ["FD00::1", "unique local, upper case"],
    ["127.1", "IPv4 short form (not an address: refused)"],
    ["0x7f.0.0.1", "IPv4 hex form (not an address: refused)"],
  ])("%s (%s) is forbidden", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each<[string, string]>([
    ["::ffff:8.8.8.8", "IPv4-mapped public address"],
    ["::ffff:808:808", "IPv4-mapped public address, hex"],
    ["2002:808:808::1", "6to4 around a public address"],
    ["2606:4700:4700::1111", "a public IPv6 address"],
    ["2606:4700:4700:0000:0000:0000:0000:1111", "the same, written out"],
  ])("%s (%s) is allowed", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

/** A server behind the proxy: records what reached it. */
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let scratch: string;
let upstream: http.Server;
let upstreamPort: number;
const seen: Seen[] = [];
let echo: net.Server;
let echoPort: number;

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-egress-"));
  upstream = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      res.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" });
      res.end(JSON.stringify({ ok: true, url: req.url }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamPort = (upstream.address() as AddressInfo).port;
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
  echoPort = (echo.address() as AddressInfo).port;
});

afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await new Promise((r) => echo?.close(r));
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

let n = 0;
async function egress(over: Partial<EgressOptions> = {}): Promise<Egress> {
  return startEgress({
    socketPath: path.join(scratch, `egress-${++n}.sock`),
    model: {
      upstream: new URL(`http://127.0.0.1:${upstreamPort}/gateway/`),
      headers: { "x-api-key": "sk-ant-REAL-key", "anthropic-beta": "from-operator" },
      strip: ["x-api-key", "authorization"],
      routes: ANTHROPIC_ROUTES,
      rules: ANTHROPIC_RULES,
    },
    network: { kind: "model-only" },
    log,
    ...over,
  });
}

/** An HTTP request through the proxy's socket (origin form, or absolute form for `path`). */
function request(
  e: Egress,
  o: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: e.socketPath, method: o.method ?? "GET", path: o.path, headers: o.headers },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(o.body);
  });
}

/** CONNECT through the proxy: its status line, and the open tunnel when it said 200. */
function connect(e: Egress, target: string): Promise<{ status: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(e.socketPath);
    let buf = "";
    socket.on("error", reject);
    socket.on("data", function onData(chunk: Buffer) {
      buf += chunk.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      resolve({ status: buf.slice(0, buf.indexOf("\r\n")), socket });
    });
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

describe("the egress proxy", () => {
  it("puts the real credentials on a model request and drops the placeholders the sandbox sent", async () => {
    const e = await egress();
    try {
      seen.length = 0;
      const r = await request(e, {
        method: "POST",
        path: "/v1/messages?beta=true",
        headers: {
          "x-api-key": "sk-ant-tether-sandbox-placeholder",
          authorization: "Bearer sk-ant-tether-sandbox-placeholder",
          "content-type": "application/json",
        },
        body: '{"model":"m"}',
      });
      expect(r.status).toBe(200);
      expect(r.headers["x-upstream"]).toBe("yes");
      expect(seen).toHaveLength(1);
      const got = seen[0]!;
      expect(got).toMatchObject({
        method: "POST",
        url: "/gateway/v1/messages?beta=true",
        body: '{"model":"m"}',
      });
      expect(got.headers["x-api-key"]).toBe("sk-ant-REAL-key");
      expect(got.headers.authorization).toBeUndefined();
      expect(got.headers["anthropic-beta"]).toBe("from-operator");
      expect(got.headers.host).toBe(`127.0.0.1:${upstreamPort}`);
      expect(JSON.stringify(got.headers)).not.toContain("placeholder");
      expect(e.stats().modelRequests).toBe(1);
    } finally {
      await e.close();
    }
  });

  it("treats an absolute-form request for its own bridge address as a model request", async () => {
    const e = await egress();
    try {
      seen.length = 0;
      const r = await request(e, {
        method: "POST",
        path: "http://127.0.0.1:8088/v1/messages",
        body: "{}",
      });
      expect(r.status).toBe(200);
      expect(seen[0]).toMatchObject({ url: "/gateway/v1/messages" });
      expect(seen[0]!.headers["x-api-key"]).toBe("sk-ant-REAL-key");
    } finally {
      await e.close();
    }
  });

  it("answers a model API it cannot reach with the API's own error shape, not a hang", async () => {
    const dead = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const e = await egress({
      model: {
        upstream: new URL(`http://127.0.0.1:${dead}`),
        headers: {},
        strip: [],
        routes: ANTHROPIC_ROUTES,
        rules: ANTHROPIC_RULES,
      },
    });
    try {
      const r = await request(e, { method: "POST", path: "/v1/messages", body: "{}" });
      expect(r.status).toBe(502);
      expect(JSON.parse(r.body)).toMatchObject({
        type: "error",
        error: { type: "api_error", message: expect.stringContaining("could not reach") },
      });
    } finally {
      await e.close();
    }
  });

  it("model-only: refuses every CONNECT and every plain-http request, saying why", async () => {
    const e = await egress({ lookup: async () => ["93.184.215.14"] });
    try {
      const c = await connect(e, "example.com:443");
      expect(c.status).toBe("HTTP/1.1 403 Forbidden");
      c.socket.destroy();
      const r = await request(e, { path: "http://example.com/" });
      expect(r.status).toBe(403);
      expect(r.body).toContain("may reach the model API only (network: model-only)");
      expect(e.stats().refused.map((x) => x.host)).toEqual(["example.com", "example.com"]);
      expect(e.stats().allowed).toEqual({});
    } finally {
      await e.close();
    }
  });

  it("never reaches a private or local address, whatever the policy and whatever a name resolves to", async () => {
    const e = await egress({
      network: { kind: "open" },
      lookup: async (host) => (host === "rebound.example" ? ["127.0.0.1"] : ["10.0.0.7", "::1"]),
      ports: new Set([443, upstreamPort]),
    });
    try {
      for (const target of [
        "rebound.example:443",
        "internal.example:443",
        `127.0.0.1:${upstreamPort}`,
        "169.254.169.254:443",
        "[::1]:443",
        // #28: three spellings of loopback the filter once let through, and one more.
        `[::127.0.0.1]:${upstreamPort}`,
        `[::7f00:1]:${upstreamPort}`,
        `[::ffff:0:7f00:1]:${upstreamPort}`,
        `[::ffff:0:127.0.0.1]:${upstreamPort}`,
        `[2002:7f00:1::]:${upstreamPort}`,
      ]) {
        const c = await connect(e, target);
        expect(c.status, target).toBe("HTTP/1.1 403 Forbidden");
        c.socket.destroy();
      }
      const r = await request(e, { path: `http://127.0.0.1:${upstreamPort}/` });
      expect(r.status).toBe(403);
      expect(r.body).toContain("private or local address");
      for (const host of ["[::127.0.0.1]", "[::7f00:1]", "[::ffff:0:7f00:1]"]) {
        const plain = await request(e, { path: `http://${host}:${upstreamPort}/` });
        expect(plain.status, host).toBe(403);
        // Judged as the address it is, not refused for failing to resolve as a name.
        expect(plain.body, host).toContain("private or local address");
      }
      expect(seen.some((s) => s.url === "/" && s.method === "GET")).toBe(false);
    } finally {
      await e.close();
    }
  });

  it("refuses ports other than 80 and 443 (the database's, say) before it looks a name up", async () => {
    let lookups = 0;
    const e = await egress({
      network: { kind: "open" },
      lookup: async () => {
        lookups++;
        return ["93.184.215.14"];
      },
    });
    try {
      const c = await connect(e, "example.com:5432");
      expect(c.status).toBe("HTTP/1.1 403 Forbidden");
      c.socket.destroy();
      expect(e.stats().refused).toEqual([
        { host: "example.com", reason: "port 5432 is not 80 or 443" },
      ]);
      expect(lookups).toBe(0);
    } finally {
      await e.close();
    }
  });

  it("a host list: an allowed name is tunnelled to the address it was checked at; others are refused", async () => {
    const e = await egress({
      network: { kind: "hosts", hosts: ["*.tools.test"] },
      lookup: async () => ["127.0.0.1"],
      // Loopback stands in for a public address here; the checks are the real ones otherwise.
      forbidden: () => false,
      ports: new Set([echoPort, upstreamPort]),
    });
    try {
      const c = await connect(e, `pkg.tools.test:${echoPort}`);
      expect(c.status).toBe("HTTP/1.1 200 Connection Established");
      const back = await new Promise<string>((resolve) => {
        c.socket.once("data", (d: Buffer) => resolve(d.toString()));
        c.socket.write("ping through the tunnel");
      });
      expect(back).toBe("ping through the tunnel");
      c.socket.destroy();

      seen.length = 0;
      const r = await request(e, {
        path: `http://pkg.tools.test:${upstreamPort}/simple/?q=1`,
        headers: { "proxy-authorization": "Basic eDp5" },
      });
      expect(r.status).toBe(200);
      expect(seen[0]).toMatchObject({ method: "GET", url: "/simple/?q=1" });
      // Hop-by-hop headers stay with the proxy; and no model credential rides along.
      expect(seen[0]!.headers["proxy-authorization"]).toBeUndefined();
      expect(seen[0]!.headers["x-api-key"]).toBeUndefined();

      const other = await connect(e, `elsewhere.test:${echoPort}`);
      expect(other.status).toBe("HTTP/1.1 403 Forbidden");
      other.socket.destroy();
      expect(e.stats()).toMatchObject({
        allowed: { "pkg.tools.test": 2 },
        refused: [{ host: "elsewhere.test", reason: expect.stringContaining("*.tools.test") }],
        modelRequests: 0,
      });
    } finally {
      await e.close();
    }
  });

  it("close() ends open tunnels and removes its socket", async () => {
    const e = await egress({
      network: { kind: "open" },
      lookup: async () => ["127.0.0.1"],
      forbidden: () => false,
      ports: new Set([echoPort]),
    });
    const c = await connect(e, `x.test:${echoPort}`);
    const closed = new Promise<void>((r) => c.socket.once("close", () => r()));
    await e.close();
    await closed;
    await expect(fs.stat(e.socketPath)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("the egress proxy: remote MCP servers (#39)", () => {
  const mcpRemotes = () => ({
    docs: {
      url: new URL(`http://127.0.0.1:${upstreamPort}/mcp-endpoint`),
      headers: { Authorization: "Bearer operator-token" },
    },
  });

  it("forwards /mcp/<name> to the server's URL with the operator's headers, dropping what the agent sent as credentials", async () => {
    const e = await egress({ mcpRemotes: mcpRemotes() });
    try {
      seen.length = 0;
      const r = await request(e, {
        method: "POST",
        path: "/mcp/docs",
        headers: {
          "content-type": "application/json",
          authorization: "Bearer agent-guess",
          cookie: "a=b",
          "mcp-session-id": "s1",
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
      expect(r.status).toBe(200);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        method: "POST",
        url: "/mcp-endpoint",
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
      expect(seen[0]!.headers.authorization).toBe("Bearer operator-token");
      expect(seen[0]!.headers.cookie).toBeUndefined();
      // The protocol's own headers pass.
      expect(seen[0]!.headers["mcp-session-id"]).toBe("s1");
      // The model API's key is never put on it.
      expect(seen[0]!.headers["x-api-key"]).toBeUndefined();
      expect(e.stats().mcpRequests).toEqual({ docs: 1 });
    } finally {
      await e.close();
    }
  });

  it("a name the run was not given, or another path under /mcp, is no MCP server: the model rules refuse it", async () => {
    const e = await egress({ mcpRemotes: mcpRemotes() });
    try {
      seen.length = 0;
      for (const target of [
        "/mcp/other",
        "/mcp/docs/../../v1/files",
        "/mcp/docs/x",
        "/mcp/constructor",
      ]) {
        const r = await request(e, { method: "POST", path: target, body: "{}" });
        expect(r.status, target).toBe(403);
      }
      expect(seen).toEqual([]);
    } finally {
      await e.close();
    }
  });
});
