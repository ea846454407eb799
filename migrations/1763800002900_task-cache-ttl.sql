-- Up Migration

-- The prompt cache's lifetime a turn asked for (agents.<name>.cacheTtl; core/cache-ttl.ts
-- chooses it under `auto`). It decides whether the NEXT turn of the conversation found the
-- session in the cache, so the savings estimate reads it instead of assuming a lifetime. NULL:
-- a turn recorded before the setting, a Codex turn (its CLI has no such setting), or one that
-- never reached the CLI.
ALTER TABLE tasks ADD COLUMN cache_ttl text CHECK (cache_ttl IN ('5m', '1h'));

-- Down Migration
ALTER TABLE tasks DROP COLUMN cache_ttl;
