-- Authorization (docs/security.md): Kafka ACLs on roles, checked by every
-- kafka.* function for current_user, whatever the backend has cached.
CREATE ROLE acl_nobody;
CREATE ROLE acl_writer;
CREATE ROLE acl_team;
CREATE ROLE acl_member IN ROLE acl_team;
CREATE ROLE acl_reader IN ROLE kafka_read_all_data;
CREATE ROLE acl_producer IN ROLE kafka_write_all_data;
CREATE ROLE acl_aclmgr;
GRANT USAGE ON SCHEMA kafka TO acl_nobody, acl_writer, acl_member, acl_aclmgr;
-- the defect of issue 10: USAGE and SELECT on three catalog tables were enough
GRANT SELECT ON kafka.topics, kafka.partitions, kafka.topic_config_overrides TO acl_nobody;
-- the others have USAGE only: the ACLs decide, the functions work with the
-- extension's rights once they allow
SELECT kafka.create_topic('acl-orders', 1);
SELECT kafka.create_topic('acl-payments', 1);
SELECT kafka.create_topic('other', 1);
SELECT partition, "offset" FROM kafka.produce('acl-orders', 'k', 'v1');
-- the superuser warmed the topic cache; a role with no ACL is refused anyway
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
SET ROLE acl_nobody;
SELECT * FROM kafka.produce('acl-orders', 'k', 'v');
SELECT kafka.delete_records('acl-orders', 0, 1);
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
SELECT * FROM kafka.list_offsets('acl-orders', 0, -1);
SELECT kafka.create_topic('acl-new');
SELECT kafka.delete_topic('acl-orders');
SELECT kafka.alter_topic_config('acl-orders', '{"retention.ms": "1000"}');
SELECT kafka.add_partitions('acl-orders', 2);
SELECT count(*) FROM kafka.consume('acl-group', 'acl-orders');
SELECT count(*) FROM kafka.table('acl-orders');
SELECT * FROM kafka.run_log_cleaner();
SELECT * FROM kafka.run_log_compaction();
SELECT kafka.flush_markers();
-- managing ACLs needs CLUSTER ALTER, listing them CLUSTER DESCRIBE
SELECT kafka.create_acl('User:acl_nobody', 'TOPIC', '*', 'ALL');
SELECT count(*) FROM kafka.describe_acls();
-- internal functions are not for PUBLIC
SELECT * FROM kafka._partition_stats(1);
RESET ROLE;

-- prefixed WRITE for acl_writer; READ for the group role acl_team
SELECT kafka.create_acl('User:acl_writer', 'TOPIC', 'acl-', 'WRITE', pattern_type => 'PREFIXED');
SELECT kafka.create_acl('User:acl_writer', 'TOPIC', 'acl-', 'WRITE', pattern_type => 'PREFIXED');
SELECT kafka.create_acl('User:acl_team', 'TOPIC', 'acl-orders', 'READ');
SELECT kafka.create_acl('User:acl_team', 'GROUP', 'team-', 'READ', pattern_type => 'PREFIXED');
SET ROLE acl_writer;
SELECT partition, "offset" FROM kafka.produce('acl-orders', 'k', 'v2');
SELECT partition, "offset" FROM kafka.produce('acl-payments', 'k', 'v1');
-- and after the call the session is the caller again, without table rights
SELECT current_user, count(*) FROM kafka.topics;
-- also after an error caught inside the call's caller
DO $$
BEGIN
	PERFORM kafka.produce('acl-orders', 'k'::text, 'v'::text, partition => 7);
EXCEPTION WHEN others THEN
	RAISE NOTICE 'caught "%" as %', SQLERRM, current_user;
END
$$;
SELECT * FROM kafka.produce('other', 'k', 'v');
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
-- WRITE implies DESCRIBE
SELECT "offset" >= 3 AS described FROM kafka.list_offsets('acl-orders', 0, -1);
SET ROLE acl_member;
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
SELECT count(*) FROM kafka.table('acl-orders');
SELECT count(*) FROM kafka.fetch('acl-payments', 0);
SELECT kafka.authorized('TOPIC', 'acl-orders', 'READ'),
	   kafka.authorized('TOPIC', 'acl-orders', 'DESCRIBE'),
	   kafka.authorized('TOPIC', 'acl-orders', 'WRITE'),
	   kafka.authorized('GROUP', 'team-x', 'READ'),
	   kafka.authorized('GROUP', 'x-team', 'READ');
-- asking about another role needs CLUSTER DESCRIBE
SELECT kafka.authorized('TOPIC', 'acl-orders', 'READ', 'acl_writer');
RESET ROLE;

-- DENY beats ALLOW, also one granted through a group role
SELECT kafka.create_acl('User:acl_member', 'TOPIC', 'acl-orders', 'READ', 'DENY');
SET ROLE acl_member;
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
RESET ROLE;
SELECT kafka.authorized('TOPIC', 'acl-orders', 'READ', 'acl_member'),
	   kafka.authorized('TOPIC', 'acl-orders', 'DESCRIBE', 'acl_member');
-- leaving the group role takes its grants away at once
SELECT * FROM kafka.delete_acls('User:acl_member');
SELECT kafka.authorized('TOPIC', 'acl-orders', 'READ', 'acl_member');
REVOKE acl_team FROM acl_member;
SELECT kafka.authorized('TOPIC', 'acl-orders', 'READ', 'acl_member');

-- User:* and a host-specific ACL (the SQL front door has no client host)
SELECT kafka.create_acl('User:*', 'TOPIC', 'other', 'DESCRIBE');
SELECT kafka.create_acl('User:acl_nobody', 'TOPIC', 'other', 'READ', host => '10.0.0.1');
SELECT kafka.authorized('TOPIC', 'other', 'DESCRIBE', 'acl_nobody'),
	   kafka.authorized('TOPIC', 'other', 'READ', 'acl_nobody');

-- the predefined roles
SET ROLE acl_reader;
SELECT count(*) FROM kafka.fetch('acl-orders', 0);
SELECT * FROM kafka.produce('acl-orders', 'k', 'v');
SET ROLE acl_producer;
SELECT partition, "offset" FROM kafka.produce('other', 'k', 'v1');
SELECT count(*) FROM kafka.fetch('other', 0);
RESET ROLE;

-- CLUSTER ALTER through an ACL is enough to manage ACLs
SELECT kafka.create_acl('User:acl_aclmgr', 'CLUSTER', 'kafka-cluster', 'ALTER');
SET ROLE acl_aclmgr;
SELECT kafka.create_acl('User:acl_nobody', 'GROUP', 'g', 'READ');
SELECT principal, resource_type, pattern_type, resource_name, operation, permission, host
  FROM kafka.describe_acls(resource_type => 'GROUP');
SELECT principal, resource_name, operation FROM kafka.delete_acls(resource_type => 'GROUP', resource_name => 'g');
RESET ROLE;

-- what Kafka refuses
SELECT kafka.create_acl('User:x', 'DELEGATION_TOKEN', 'tok', 'DESCRIBE');
SELECT kafka.create_acl('Group:x', 'TOPIC', 't', 'READ');
SELECT kafka.create_acl('User:x', 'CLUSTER', 'c', 'ALTER');
SELECT kafka.create_acl('User:x', 'TOPIC', '*', 'READ', pattern_type => 'PREFIXED');
SELECT kafka.create_acl('User:x', 'TOPIC', 't', 'ANY');
SELECT kafka.create_acl('User:x', 'TOPIC', 't', 'FLY');
-- MATCH: the ACLs that apply to a name
SELECT principal, pattern_type, resource_name, operation
  FROM kafka.describe_acls(resource_type => 'TOPIC', resource_name => 'acl-orders', pattern_type => 'MATCH')
 ORDER BY 1, 2, 3, 4;

-- user-facing functions pin search_path; internal ones are not for PUBLIC
-- (aggregates take no settings: their support functions are internal ones)
SELECT count(*) AS unpinned FROM pg_proc
 WHERE pronamespace = 'kafka'::regnamespace AND proname !~ '^_' AND prokind = 'f'
   AND (proconfig IS NULL OR NOT 'search_path=pg_catalog, pg_temp' = ANY (proconfig));
SELECT proname FROM pg_proc
 WHERE pronamespace = 'kafka'::regnamespace AND proname ~ '^_'
   AND has_function_privilege('public', oid, 'EXECUTE');

-- a change under session_replication_role = replica (logical replication's
-- apply, a restore) still reaches the ACL caches: the trigger fires always
SELECT kafka.create_acl('User:acl_nobody', 'TOPIC', 'acl-replica', 'READ');
SELECT kafka.authorized('TOPIC', 'acl-replica', 'READ', 'acl_nobody') AS before_delete;
SET session_replication_role = replica;
DELETE FROM kafka.acls WHERE resource_name = 'acl-replica';
SELECT kafka.authorized('TOPIC', 'acl-replica', 'READ', 'acl_nobody') AS after_delete;
RESET session_replication_role;
SELECT tgrelid::regclass, tgname, tgenabled FROM pg_trigger
 WHERE tgname IN ('acls_changed', 'client_quotas_changed') ORDER BY 2;

SELECT count(*) FROM kafka.delete_acls();
SELECT kafka.delete_topic('acl-orders');
SELECT kafka.delete_topic('acl-payments');
SELECT kafka.delete_topic('other');
REVOKE ALL ON SCHEMA kafka FROM acl_nobody, acl_writer, acl_member, acl_aclmgr;
REVOKE ALL ON kafka.topics, kafka.partitions, kafka.topic_config_overrides FROM acl_nobody;
DROP ROLE acl_nobody, acl_writer, acl_team, acl_member, acl_reader, acl_producer, acl_aclmgr;
