/**
 * The operator's MCP servers (issue #39): a JSON file named by TETHER_MCP_SERVERS, in the
 * `mcpServers` shape Claude Code and Cursor read (`command`/`args`/`env` for a stdio server,
 * `type: "http"` with `url`/`headers` for a remote one). Checked once at start (env.ts), so a
 * bad file stops the process with words naming the entry and the field. A repository only
 * picks servers by name (`agents.<name>.mcpServers` in .github/tether.yml, agent-config.ts): it
 * never names a command, a URL or a secret.
 *
 * Where each runs, and why no credential of theirs enters the agent's sandbox, is in
 * docs/security.md "MCP servers": a remote server is reached through the run's egress proxy,
 * which adds its headers on the way out; a stdio server with an `env` runs in a sandbox of its
 * own outside the agent's, reached over a socket.
 */
import fs from "node:fs";
import { z } from "zod";

/**
 * A server's name: what a repository picks it by, and the middle of its tools' names
 * (`mcp__<name>__<tool>`). No underscores, so the tool name splits one way only; `tether` is
 * Tether's own line-comment server.
 */
export const MCP_SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,47}$/;
const RESERVED = new Set(["tether"]);

const EnvName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");
const HeaderName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be an HTTP header name");
const OneLine = z.string().regex(/^[^\r\n\0]*$/, "must be one line");

/** A server the CLI talks to over stdin and stdout. */
export const McpStdioServer = z.strictObject({
  type: z.literal("stdio").optional(),
  /** The program: an absolute path, or a name found on PATH. */
  command: z
    .string()
    .min(1, "must not be empty")
    .regex(/^[^\0]+$/),
  args: z
    .array(z.string().regex(/^[^\0]*$/))
    .max(100)
    .default([]),
  /**
   * Its environment (tokens, say). With anything here the server runs outside the agent's
   * sandbox, in one of its own; with nothing, inside the agent's.
   */
  env: z.record(EnvName, OneLine).default({}),
  /**
   * Tether's own: hosts the server may reach when it runs outside the agent's sandbox (through
   * an egress proxy of its own, like an agent's `network` list). Default: none.
   */
  network: z
    .array(
      z
        .string()
        .regex(
          /^(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/,
          "must be a host name like api.example.com or *.example.com",
        ),
    )
    .max(50)
    .default([]),
});
export type McpStdioServer = z.output<typeof McpStdioServer>;

/** A server reached over HTTP (MCP's streamable HTTP transport). */
export const McpHttpServer = z.strictObject({
  type: z.literal("http"),
  url: z
    .url("must be a URL like https://mcp.example.com/mcp")
    .refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL")
    .refine((u) => !URL.canParse(u) || !new URL(u).username, "must not hold credentials"),
  /** Added by Tether's egress proxy on the way out; the agent never sees them. */
  headers: z.record(HeaderName, OneLine).default({}),
});
export type McpHttpServer = z.output<typeof McpHttpServer>;

const McpServerEntry = z.preprocess(
  (v) => (typeof v === "object" && v !== null && !("type" in v) ? { ...v, type: "stdio" } : v),
  z.discriminatedUnion(
    "type",
    [McpStdioServer.extend({ type: z.literal("stdio") }), McpHttpServer],
    'type must be "stdio" (command, args, env) or "http" (url, headers)',
  ),
);
export type McpServerEntry = z.output<typeof McpServerEntry>;

export const McpServersFile = z.strictObject({
  mcpServers: z
    .record(
      z
        .string()
        .regex(MCP_SERVER_NAME, "server names are letters, digits and single hyphens (at most 48)")
        .refine((n) => !RESERVED.has(n.toLowerCase()), "tether is Tether's own server's name"),
      McpServerEntry,
    )
    .refine((r) => Object.keys(r).length <= 50, "at most 50 servers"),
});

/** The operator's servers, by name. */
export type McpServers = Record<string, McpServerEntry>;

/** One picked server, with its name. */
export type NamedMcpServer = McpServerEntry & { name: string };

/**
 * Reads and checks the file; returns the servers, or the problems in words (each naming the
 * field, never a value: an `env` or `headers` value is a secret).
 */
export function readMcpServers(
  file: string,
): { ok: true; servers: McpServers } | { ok: false; problems: string[] } {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    return {
      ok: false,
      problems: [`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`],
    };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, problems: [`${file} is not JSON: ${(err as Error).message}`] };
  }
  const parsed = McpServersFile.safeParse(raw);
  if (!parsed.success)
    return {
      ok: false,
      problems: parsed.error.issues.map((i) => {
        const at = i.path.map(String).join(".") || "(file)";
        const keys = i.code === "unrecognized_keys" ? ` (${i.keys.join(", ")})` : "";
        // A bad key (a server's name, an env or header name): its own check says why.
        const message = i.code === "invalid_key" ? (i.issues[0]?.message ?? i.message) : i.message;
        return `${file}: ${at}: ${message}${keys}`;
      }),
    };
  return { ok: true, servers: parsed.data.mcpServers };
}

/** Every secret the servers hold (env values, header values): scrubbed from logs and comments. */
export function mcpSecrets(servers: McpServers): string[] {
  const out: string[] = [];
  for (const s of Object.values(servers)) {
    const values = s.type === "http" ? Object.values(s.headers) : Object.values(s.env);
    for (const v of values) {
      if (v.length >= 8) out.push(v);
      // `Bearer <token>`: the token alone may show up too.
      const token = /^\S+\s+(\S{8,})$/.exec(v)?.[1];
      if (token) out.push(token);
    }
  }
  return out;
}
