import { describe, expect, it } from "vitest";
import { postgresEnv } from "../../src/db/postgres-process.js";
import { canSearch, type DirStat } from "../../src/db/postgres-runtime.js";

describe("canSearch: may the database user pass through a directory", () => {
  const postgres = { uid: 101, gid: 104 };
  it.each<{ dir: DirStat; may: boolean; why: string }>([
    {
      dir: { uid: 0, gid: 0, mode: 0o40700 },
      may: false,
      why: "root's private directory (mktemp -d, /root)",
    },
    { dir: { uid: 0, gid: 0, mode: 0o40755 }, may: true, why: "open to all" },
    { dir: { uid: 0, gid: 0, mode: 0o40711 }, may: true, why: "others may pass, not list" },
    {
      dir: { uid: 0, gid: 104, mode: 0o40750 },
      may: true,
      why: "root's, open to the postgres group",
    },
    {
      dir: { uid: 0, gid: 104, mode: 0o40705 },
      may: false,
      why: "the group bits decide for a member, not the others bits",
    },
    { dir: { uid: 101, gid: 0, mode: 0o40700 }, may: true, why: "its own" },
    {
      dir: { uid: 101, gid: 0, mode: 0o40070 },
      may: false,
      why: "the owner bits decide for the owner",
    },
    { dir: { uid: 0, gid: 0, mode: 0o41777 }, may: true, why: "/tmp" },
  ])("$why: $may", ({ dir, may }) => expect(canSearch(dir, postgres)).toBe(may));
});

describe("postgresEnv: what the PostgreSQL children get of Tether's environment", () => {
  it("passes the path, locale and time zone, and nothing else (no secret)", () => {
    const env = postgresEnv({
      PATH: "/usr/bin",
      LANG: "en_US.UTF-8",
      LC_ALL: "C.UTF-8",
      LC_MESSAGES: "C",
      TZ: "Europe/Paris",
      LD_LIBRARY_PATH: "/opt/lib",
      HOME: "/root",
      WEBHOOK_SECRET: "s",
      PRIVATE_KEY: "k",
      DATABASE_URL: "postgres://u:p@h/d",
      ANTHROPIC_API_KEY: "sk-ant-x",
      PGPASSWORD: "p",
      TETHER_DASHBOARD_TOKEN: "t",
      NODE_OPTIONS: "--require /tmp/x.js",
    });
    expect(env).toEqual({
      PATH: "/usr/bin",
      LANG: "en_US.UTF-8",
      LC_ALL: "C.UTF-8",
      LC_MESSAGES: "C",
      TZ: "Europe/Paris",
      LD_LIBRARY_PATH: "/opt/lib",
    });
  });

  it("gives a PATH when there is none", () => {
    expect(postgresEnv({})).toEqual({ PATH: "/usr/local/bin:/usr/bin:/bin" });
  });
});
