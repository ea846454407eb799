import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";

export interface TestDatabase {
  url: string;
  pool: Pool;
  name: string;
}

/**
 * A fresh, migrated database for this test file (a copy of the run's template), dropped after
 * the file's tests. Call at the top level of a test file or in beforeAll.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("pgAdminUrl");
  const template = inject("pgTemplate");
  const name = `t_${process.pid}_${randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  const pool = createPool(url, { max: 20 });
  afterAll(async () => {
    await pool.end();
    await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  return { url, pool, name };
}

/** An empty database with no migrations applied (for migration tests). */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("pgAdminUrl");
  const name = `e_${process.pid}_${randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  const pool = createPool(url, { max: 5 });
  afterAll(async () => {
    await pool.end();
    await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  return { url, pool, name };
}

async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
