-- Up Migration

-- A second agent CLI (OpenAI's Codex beside Claude Code). A session belongs to the CLI that
-- made it, and only that CLI resumes it (the resume decision compares sessions.cli with the
-- agent's); each turn records the CLI it ran on, and the hourly roll-up is kept per CLI so the
-- dashboard, /api/stats and metrics split resume rate, reasons and cost by CLI. Every row from
-- before this migration was Claude's: the defaults say so, and NULL in tasks.cli counts as
-- claude, so the roll-up rows already there stay exact without a backfill.

ALTER TABLE sessions ADD COLUMN cli text NOT NULL DEFAULT 'claude'
  CHECK (cli IN ('claude', 'codex'));
ALTER TABLE tasks ADD COLUMN cli text CHECK (cli IN ('claude', 'codex'));

ALTER TABLE turn_stats_hourly ADD COLUMN cli text NOT NULL DEFAULT 'claude';
ALTER TABLE turn_stats_hourly DROP CONSTRAINT turn_stats_hourly_pkey;
ALTER TABLE turn_stats_hourly ADD PRIMARY KEY (hour, cli, follow_up, resumed, reason, outcome);

CREATE OR REPLACE FUNCTION turn_stats_sql(source text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $fn$
SELECT ARRAY[
  format($q$
  INSERT INTO turn_stats_hourly AS s
         (hour, cli, follow_up, resumed, reason, outcome, turns, with_usage, input_tokens,
          output_tokens, cache_read_tokens, cache_creation_tokens, with_cost, cost_usd,
          with_duration, duration_ms)
  SELECT hour, cli, follow_up, resumed, reason, outcome,
         sum(sign), sum(sign * has_usage), sum(sign * input), sum(sign * output),
         sum(sign * cache_read), sum(sign * cache_creation), sum(sign * has_cost),
         sum(sign * cost), sum(sign * has_duration), sum(sign * duration)
    FROM (SELECT sign,
                 date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00') AS hour,
                 coalesce(cli, 'claude') AS cli,
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
   GROUP BY hour, cli, follow_up, resumed, reason, outcome
  HAVING (sum(sign), sum(sign * has_usage), sum(sign * input), sum(sign * output),
          sum(sign * cache_read), sum(sign * cache_creation), sum(sign * has_cost),
          sum(sign * cost), sum(sign * has_duration), sum(sign * duration))
         IS DISTINCT FROM (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
   ORDER BY hour, cli, follow_up, resumed, reason, outcome
  ON CONFLICT (hour, cli, follow_up, resumed, reason, outcome) DO UPDATE SET
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

CREATE OR REPLACE FUNCTION turn_stats_track() RETURNS trigger
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
       AND (o.created_at, o.repo, o.agent, o.cli, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.cli, n.resume_decision, n.resume_reason, n.is_follow_up,
              n.outcome, n.input_tokens, n.output_tokens, n.cache_read_tokens,
              n.cache_creation_tokens, n.cost_usd, n.duration_ms)
     LIMIT 1;
    IF NOT FOUND THEN RETURN NULL; END IF;
    source := $src$
      SELECT -1 AS sign, o.* FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.created_at, o.repo, o.agent, o.cli, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.cli, n.resume_decision, n.resume_reason, n.is_follow_up,
              n.outcome, n.input_tokens, n.output_tokens, n.cache_read_tokens,
              n.cache_creation_tokens, n.cost_usd, n.duration_ms)
      UNION ALL
      SELECT 1 AS sign, n.* FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.created_at, o.repo, o.agent, o.cli, o.resume_decision, o.resume_reason, o.is_follow_up,
              o.outcome, o.input_tokens, o.output_tokens, o.cache_read_tokens,
              o.cache_creation_tokens, o.cost_usd, o.duration_ms)
             IS DISTINCT FROM
             (n.created_at, n.repo, n.agent, n.cli, n.resume_decision, n.resume_reason, n.is_follow_up,
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

-- Down Migration
CREATE OR REPLACE FUNCTION turn_stats_sql(source text) RETURNS text[]
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

CREATE OR REPLACE FUNCTION turn_stats_track() RETURNS trigger
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

DELETE FROM turn_stats_hourly;
ALTER TABLE turn_stats_hourly DROP CONSTRAINT turn_stats_hourly_pkey;
ALTER TABLE turn_stats_hourly DROP COLUMN cli;
ALTER TABLE turn_stats_hourly ADD PRIMARY KEY (hour, follow_up, resumed, reason, outcome);
DO $do$
DECLARE
  stmt text;
BEGIN
  -- Rebuild the hourly roll-up without the CLI split (the daily one never had it).
  FOREACH stmt IN ARRAY turn_stats_sql('SELECT 1 AS sign, t.* FROM tasks t') LOOP
    IF stmt LIKE '%turn_stats_hourly%' AND stmt NOT LIKE '%turn_stats_daily_repo%' THEN
      EXECUTE stmt;
    END IF;
  END LOOP;
END
$do$;
ALTER TABLE tasks DROP COLUMN cli;
ALTER TABLE sessions DROP COLUMN cli;
