-- Up Migration

-- Roll-ups behind /dashboard and /api/stats (src/sql/stats.ts).
--
-- Aggregating the tasks table itself costs time in proportion to the turns in the window:
-- measured on 2 cores, about 0.6 s per million turns, even as an index-only scan. These two
-- tables hold the same sums per UTC hour (and per UTC day for each repository and agent), kept
-- exact by statement-level triggers on tasks, so a 30-day read touches a few thousand rows
-- whatever the size of tasks. bench/stats.ts measures both.
--
-- A turn is a task with a resume decision; it is counted in the hour (and day) of its
-- created_at. Keys never hold NULL: a missing reason is 'unknown', a missing outcome 'pending'.

CREATE TABLE turn_stats_hourly (
  hour                   timestamptz NOT NULL,   -- date_bin('1 hour', created_at, '2000-01-01 UTC')
  follow_up              boolean NOT NULL,       -- is_follow_up, or resumed
  resumed                boolean NOT NULL,       -- resume_decision = 'resume' and reason 'resumed'
  reason                 text NOT NULL,
  outcome                text NOT NULL,
  turns                  bigint NOT NULL DEFAULT 0,
  with_usage             bigint NOT NULL DEFAULT 0,  -- turns that reported input_tokens
  input_tokens           bigint NOT NULL DEFAULT 0,
  output_tokens          bigint NOT NULL DEFAULT 0,
  cache_read_tokens      bigint NOT NULL DEFAULT 0,
  cache_creation_tokens  bigint NOT NULL DEFAULT 0,
  with_cost              bigint NOT NULL DEFAULT 0,
  cost_usd               numeric(20, 6) NOT NULL DEFAULT 0,
  with_duration          bigint NOT NULL DEFAULT 0,
  duration_ms            bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (hour, follow_up, resumed, reason, outcome)
);

CREATE TABLE turn_stats_daily_repo (
  day                    timestamptz NOT NULL,   -- date_bin('1 day', created_at, '2000-01-01 UTC')
  repo                   text NOT NULL,
  agent                  text NOT NULL,
  turns                  bigint NOT NULL DEFAULT 0,
  follow_ups             bigint NOT NULL DEFAULT 0,
  resumed                bigint NOT NULL DEFAULT 0,
  input_tokens           bigint NOT NULL DEFAULT 0,
  output_tokens          bigint NOT NULL DEFAULT 0,
  cache_read_tokens      bigint NOT NULL DEFAULT 0,
  cache_creation_tokens  bigint NOT NULL DEFAULT 0,
  cost_usd               numeric(20, 6) NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, agent)
);

-- The two upserts that apply a set of signed task rows to the roll-ups, as SQL text over
-- `source` (a query yielding `sign` (+1 adds a row, -1 takes it away) and the tasks columns).
-- Text, because only the trigger function itself can see its transition tables: it EXECUTEs
-- these. Upserts run in key order, so two transactions touching the same roll-up rows lock
-- them in the same order and cannot deadlock each other.
CREATE FUNCTION turn_stats_sql(source text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $fn$
SELECT ARRAY[
  format($q$
  INSERT INTO turn_stats_hourly AS s
         (hour, follow_up, resumed, reason, outcome, turns, with_usage, input_tokens,
          output_tokens, cache_read_tokens, cache_creation_tokens, with_cost, cost_usd,
          with_duration, duration_ms)
  SELECT hour, follow_up, resumed, reason, outcome,
         sum(sign), sum(sign * has_usage), sum(sign * input), sum(sign * output),
         sum(sign * cache_read), sum(sign * cache_creation), sum(sign * has_cost),
         sum(sign * cost), sum(sign * has_duration), sum(sign * duration)
    FROM (SELECT sign,
                 date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00') AS hour,
                 coalesce(is_follow_up, false) OR resumed AS follow_up, resumed,
                 coalesce(resume_reason, 'unknown') AS reason,
                 coalesce(outcome, 'pending') AS outcome,
                 (input_tokens IS NOT NULL)::int AS has_usage, coalesce(input_tokens, 0) AS input,
                 coalesce(output_tokens, 0) AS output, coalesce(cache_read_tokens, 0) AS cache_read,
                 coalesce(cache_creation_tokens, 0) AS cache_creation,
                 (cost_usd IS NOT NULL)::int AS has_cost, coalesce(cost_usd, 0) AS cost,
                 (duration_ms IS NOT NULL)::int AS has_duration, coalesce(duration_ms, 0) AS duration
            FROM (SELECT src.*, (src.resume_decision = 'resume'
                                 AND src.resume_reason IS NOT DISTINCT FROM 'resumed') AS resumed
                    FROM (%s) src
                   WHERE src.resume_decision IS NOT NULL) t) d
   GROUP BY hour, follow_up, resumed, reason, outcome
  HAVING (sum(sign), sum(sign * has_usage), sum(sign * input), sum(sign * output),
          sum(sign * cache_read), sum(sign * cache_creation), sum(sign * has_cost),
          sum(sign * cost), sum(sign * has_duration), sum(sign * duration))
         IS DISTINCT FROM (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
   ORDER BY hour, follow_up, resumed, reason, outcome
  ON CONFLICT (hour, follow_up, resumed, reason, outcome) DO UPDATE SET
         turns = s.turns + EXCLUDED.turns,
         with_usage = s.with_usage + EXCLUDED.with_usage,
         input_tokens = s.input_tokens + EXCLUDED.input_tokens,
         output_tokens = s.output_tokens + EXCLUDED.output_tokens,
         cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
         cache_creation_tokens = s.cache_creation_tokens + EXCLUDED.cache_creation_tokens,
         with_cost = s.with_cost + EXCLUDED.with_cost,
         cost_usd = s.cost_usd + EXCLUDED.cost_usd,
         with_duration = s.with_duration + EXCLUDED.with_duration,
         duration_ms = s.duration_ms + EXCLUDED.duration_ms
  $q$, source),
  format($q$
  INSERT INTO turn_stats_daily_repo AS s
         (day, repo, agent, turns, follow_ups, resumed, input_tokens, output_tokens,
          cache_read_tokens, cache_creation_tokens, cost_usd)
  SELECT day, repo, agent,
         sum(sign), sum(sign * follow_up), sum(sign * resumed), sum(sign * input),
         sum(sign * output), sum(sign * cache_read), sum(sign * cache_creation), sum(sign * cost)
    FROM (SELECT sign, repo, agent,
                 date_bin('1 day', created_at, timestamptz '2000-01-01 00:00:00+00') AS day,
                 (coalesce(is_follow_up, false) OR resumed)::int AS follow_up, resumed::int AS resumed,
                 coalesce(input_tokens, 0) AS input, coalesce(output_tokens, 0) AS output,
                 coalesce(cache_read_tokens, 0) AS cache_read,
                 coalesce(cache_creation_tokens, 0) AS cache_creation, coalesce(cost_usd, 0) AS cost
            FROM (SELECT src.*, (src.resume_decision = 'resume'
                                 AND src.resume_reason IS NOT DISTINCT FROM 'resumed') AS resumed
                    FROM (%s) src
                   WHERE src.resume_decision IS NOT NULL) t) d
   GROUP BY day, repo, agent
  HAVING (sum(sign), sum(sign * follow_up), sum(sign * resumed), sum(sign * input),
          sum(sign * output), sum(sign * cache_read), sum(sign * cache_creation), sum(sign * cost))
         IS DISTINCT FROM (0, 0, 0, 0, 0, 0, 0, 0)
   ORDER BY day, repo, agent
  ON CONFLICT (day, repo, agent) DO UPDATE SET
         turns = s.turns + EXCLUDED.turns,
         follow_ups = s.follow_ups + EXCLUDED.follow_ups,
         resumed = s.resumed + EXCLUDED.resumed,
         input_tokens = s.input_tokens + EXCLUDED.input_tokens,
         output_tokens = s.output_tokens + EXCLUDED.output_tokens,
         cache_read_tokens = s.cache_read_tokens + EXCLUDED.cache_read_tokens,
         cache_creation_tokens = s.cache_creation_tokens + EXCLUDED.cache_creation_tokens,
         cost_usd = s.cost_usd + EXCLUDED.cost_usd
  $q$, source)
]
$fn$;

-- Statement-level, with transition tables: a bulk insert costs one aggregate, not one per row.
-- Statements that touch no turn, and updates that leave every counted column alone
-- (heartbeats, leases, comment ids), cost one look at the statement's rows and write nothing.
-- Renaming or dropping a counted column needs this function updated in the same migration.
CREATE FUNCTION turn_stats_track() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  source text;
  stmt text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM 1 FROM new_rows n WHERE n.resume_decision IS NOT NULL LIMIT 1;
    IF NOT FOUND THEN RETURN NULL; END IF;
    source := 'SELECT 1 AS sign, n.* FROM new_rows n';
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM 1 FROM old_rows o WHERE o.resume_decision IS NOT NULL LIMIT 1;
    IF NOT FOUND THEN RETURN NULL; END IF;
    source := 'SELECT -1 AS sign, o.* FROM old_rows o';
  ELSE
    PERFORM 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
     WHERE (o.resume_decision IS NOT NULL OR n.resume_decision IS NOT NULL)
       AND (o.created_at, o.repo, o.agent, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.resume_decision, n.resume_reason, n.is_follow_up,
              n.outcome, n.input_tokens, n.output_tokens, n.cache_read_tokens,
              n.cache_creation_tokens, n.cost_usd, n.duration_ms)
     LIMIT 1;
    IF NOT FOUND THEN RETURN NULL; END IF;
    source := $src$
      SELECT -1 AS sign, o.* FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.created_at, o.repo, o.agent, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.resume_decision, n.resume_reason, n.is_follow_up,
              n.outcome, n.input_tokens, n.output_tokens, n.cache_read_tokens,
              n.cache_creation_tokens, n.cost_usd, n.duration_ms)
      UNION ALL
      SELECT 1 AS sign, n.* FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.created_at, o.repo, o.agent, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.resume_decision, n.resume_reason, n.is_follow_up,
              n.outcome, n.input_tokens, n.output_tokens, n.cache_read_tokens,
              n.cache_creation_tokens, n.cost_usd, n.duration_ms)
    $src$;
  END IF;
  FOREACH stmt IN ARRAY turn_stats_sql(source) LOOP
    EXECUTE stmt;
  END LOOP;
  RETURN NULL;
END
$fn$;

CREATE FUNCTION turn_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  TRUNCATE turn_stats_hourly, turn_stats_daily_repo;
  RETURN NULL;
END
$fn$;

-- Triggers first: CREATE TRIGGER locks tasks against writes until this migration commits, so
-- the backfill below sees every turn and none is counted twice.
CREATE TRIGGER turn_stats_insert AFTER INSERT ON tasks
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION turn_stats_track();
CREATE TRIGGER turn_stats_update AFTER UPDATE ON tasks
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION turn_stats_track();
CREATE TRIGGER turn_stats_delete AFTER DELETE ON tasks
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION turn_stats_track();
CREATE TRIGGER turn_stats_truncate AFTER TRUNCATE ON tasks
  FOR EACH STATEMENT EXECUTE FUNCTION turn_stats_truncate();

DO $do$
DECLARE
  stmt text;
BEGIN
  FOREACH stmt IN ARRAY turn_stats_sql('SELECT 1 AS sign, t.* FROM tasks t') LOOP
    EXECUTE stmt;
  END LOOP;
END
$do$;

-- Down Migration
DROP TRIGGER turn_stats_truncate ON tasks;
DROP TRIGGER turn_stats_delete ON tasks;
DROP TRIGGER turn_stats_update ON tasks;
DROP TRIGGER turn_stats_insert ON tasks;
DROP FUNCTION turn_stats_truncate();
DROP FUNCTION turn_stats_track();
DROP FUNCTION turn_stats_sql(text);
DROP TABLE turn_stats_daily_repo;
DROP TABLE turn_stats_hourly;
