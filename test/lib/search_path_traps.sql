--
-- Schema kp_trap: a look-alike of pg_catalog's operators and functions,
-- each of which says so when it is called (WARNING "trap sprung: ...") and
-- then does what the original does.  With search_path = kp_trap, pg_catalog
-- every unqualified operator or function in a statement resolves to its
-- trap: a statement kafka_pg issues must never spring one
-- (src/catalog/spi.c, kp_worker_connect).  Used by sql/search_path.sql
-- and test/wire/session_defaults.py.  Anyone with CREATE on a schema on a
-- path could make such objects; these are made by a superuser only
-- because the tests are.
--
-- What is copied: every pg_catalog operator over the types below; every
-- plain pg_catalog function whose arguments and result are of those types
-- (same names, argument names and defaults, so named notation such as
-- make_interval(secs => ...) finds them too); and by hand the polymorphic
-- and aggregate ones kafka_pg's SQL uses (unnest, array operators, count,
-- max, min, sum, generate_series) plus nextval(text), which an untyped
-- literal prefers to nextval(regclass).
--
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS kp_trap CASCADE;
CREATE SCHEMA kp_trap;
GRANT USAGE ON SCHEMA kp_trap TO PUBLIC;

CREATE FUNCTION kp_trap.sprung(what text) RETURNS void
	LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	RAISE WARNING 'trap sprung: % (as %)', what, current_user;
END
$$;

DO $gen$
DECLARE
	scalars regtype[] := ARRAY['boolean', 'smallint', 'integer', 'bigint', 'numeric',
		'double precision', 'real', 'text', 'name', 'bytea', 'timestamp with time zone',
		'timestamp without time zone', 'date', 'interval', 'oid', 'xid8', 'jsonb',
		'uuid', '"char"']::regtype[];
	arrays regtype[] := ARRAY['smallint[]', 'integer[]', 'bigint[]', 'text[]']::regtype[];
	r record;
	n integer := 0;
	a regtype;
	op text;
BEGIN
	FOR r IN SELECT o.oprname, o.oprleft, o.oprright, o.oprresult
			   FROM pg_catalog.pg_operator o
			  WHERE o.oprnamespace = 'pg_catalog'::regnamespace
				AND (o.oprleft = 0 OR o.oprleft = ANY (scalars))
				AND o.oprright = ANY (scalars) AND o.oprresult = ANY (scalars) LOOP
		n := n + 1;
		IF r.oprleft = 0 THEN
			EXECUTE format('CREATE FUNCTION kp_trap.op%s(%s) RETURNS %s LANGUAGE plpgsql '
						   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%L); '
						   'RETURN OPERATOR(pg_catalog.%s) $1; END$b$',
						   n, r.oprright::regtype, r.oprresult::regtype,
						   format('operator %s %s', r.oprname, r.oprright::regtype), r.oprname);
			EXECUTE format('CREATE OPERATOR kp_trap.%s (RIGHTARG = %s, FUNCTION = kp_trap.op%s)',
						   r.oprname, r.oprright::regtype, n);
		ELSE
			EXECUTE format('CREATE FUNCTION kp_trap.op%s(%s, %s) RETURNS %s LANGUAGE plpgsql '
						   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%L); '
						   'RETURN $1 OPERATOR(pg_catalog.%s) $2; END$b$',
						   n, r.oprleft::regtype, r.oprright::regtype, r.oprresult::regtype,
						   format('operator %s %s %s', r.oprleft::regtype, r.oprname,
								  r.oprright::regtype), r.oprname);
			EXECUTE format('CREATE OPERATOR kp_trap.%s (LEFTARG = %s, RIGHTARG = %s, '
						   'FUNCTION = kp_trap.op%s)',
						   r.oprname, r.oprleft::regtype, r.oprright::regtype, n);
		END IF;
	END LOOP;

	-- the array operators are polymorphic in pg_catalog; an exact type wins
	FOREACH a IN ARRAY arrays LOOP
		FOREACH op IN ARRAY ARRAY['=', '<>', '@>', '<@', '&&'] LOOP
			n := n + 1;
			EXECUTE format('CREATE FUNCTION kp_trap.op%s(%s, %s) RETURNS boolean LANGUAGE plpgsql '
						   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%L); '
						   'RETURN $1 OPERATOR(pg_catalog.%s) $2; END$b$',
						   n, a, a, format('operator %s %s %s', a, op, a), op);
			EXECUTE format('CREATE OPERATOR kp_trap.%s (LEFTARG = %s, RIGHTARG = %s, '
						   'FUNCTION = kp_trap.op%s)', op, a, a, n);
		END LOOP;
		EXECUTE format('CREATE FUNCTION kp_trap.unnest(%s) RETURNS SETOF %s LANGUAGE plpgsql '
					   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%L); '
					   'RETURN QUERY SELECT * FROM pg_catalog.unnest($1); END$b$',
					   a, format_type(typelem, NULL), format('unnest(%s)', a))
			FROM pg_catalog.pg_type WHERE oid = a;
	END LOOP;

	-- plain functions over those types, with their argument names and defaults
	FOR r IN SELECT p.oid, p.proname, p.proretset, p.pronargs,
					pg_catalog.pg_get_function_arguments(p.oid) AS args,
					pg_catalog.pg_get_function_result(p.oid) AS result
			   FROM pg_catalog.pg_proc p
			  WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'f'
				AND p.provariadic = 0 AND p.proallargtypes IS NULL
				AND p.prorettype = ANY (scalars)
				AND p.proargtypes::oid[] <@ scalars::oid[] LOOP
		EXECUTE format('CREATE FUNCTION kp_trap.%I(%s) RETURNS %s LANGUAGE plpgsql '
					   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%L); '
					   '%s pg_catalog.%I(%s); END$b$',
					   r.proname, r.args, r.result, format('function %s', r.oid::regprocedure),
					   CASE WHEN r.proretset THEN 'RETURN QUERY SELECT * FROM' ELSE 'RETURN' END,
					   r.proname,
					   (SELECT coalesce(string_agg('$' || i, ', '), '')
						  FROM generate_series(1, r.pronargs) i));
	END LOOP;
END
$gen$;

CREATE FUNCTION kp_trap.nextval(text) RETURNS bigint LANGUAGE plpgsql
	SET search_path = pg_catalog AS $$
BEGIN
	PERFORM kp_trap.sprung('function nextval(text)');
	RETURN pg_catalog.nextval($1::regclass);
END
$$;

-- aggregates: count(*), and max, min, sum over the numbers and timestamps
CREATE FUNCTION kp_trap.count_step(bigint) RETURNS bigint LANGUAGE plpgsql
	SET search_path = pg_catalog AS $$
BEGIN
	PERFORM kp_trap.sprung('aggregate count(*)');
	RETURN $1 + 1;
END
$$;
CREATE AGGREGATE kp_trap.count(*) (SFUNC = kp_trap.count_step, STYPE = bigint, INITCOND = '0');
DO $gen$
DECLARE
	t regtype;
BEGIN
	FOREACH t IN ARRAY ARRAY['integer', 'bigint', 'numeric', 'timestamp with time zone',
		'text']::regtype[] LOOP
		EXECUTE format('CREATE FUNCTION kp_trap.max_step(%1$s, %1$s) RETURNS %1$s LANGUAGE plpgsql '
					   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%2$L); '
					   'RETURN greatest($1, $2); END$b$', t, format('aggregate max(%s)', t));
		EXECUTE format('CREATE AGGREGATE kp_trap.max(%1$s) (SFUNC = kp_trap.max_step, STYPE = %1$s)', t);
		EXECUTE format('CREATE FUNCTION kp_trap.min_step(%1$s, %1$s) RETURNS %1$s LANGUAGE plpgsql '
					   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%2$L); '
					   'RETURN least($1, $2); END$b$', t, format('aggregate min(%s)', t));
		EXECUTE format('CREATE AGGREGATE kp_trap.min(%1$s) (SFUNC = kp_trap.min_step, STYPE = %1$s)', t);
	END LOOP;
	FOREACH t IN ARRAY ARRAY['integer', 'bigint', 'numeric']::regtype[] LOOP
		EXECUTE format('CREATE FUNCTION kp_trap.sum_step(numeric, %1$s) RETURNS numeric LANGUAGE plpgsql '
					   'SET search_path = pg_catalog AS $b$BEGIN PERFORM kp_trap.sprung(%2$L); '
					   'RETURN coalesce($1, 0) + $2; END$b$', t, format('aggregate sum(%s)', t));
		EXECUTE format('CREATE AGGREGATE kp_trap.sum(%1$s) (SFUNC = kp_trap.sum_step, STYPE = numeric)', t);
	END LOOP;
END
$gen$;
RESET client_min_messages;
