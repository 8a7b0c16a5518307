/*-------------------------------------------------------------------------
 *
 * topics.c
 *	  Topics and partitions: the only writer of kafka.topics,
 *	  kafka.partitions and kafka.topic_config_overrides, and the cache that
 *	  produce and fetch read them through.
 *
 * Locking: every user of a topic holds a lock on the topic object
 * (LockDatabaseObject on kafka.topics' OID and the topic id) until the end
 * of its transaction: AccessShareLock to produce or fetch,
 * ShareUpdateExclusiveLock to add partitions or alter configs (so those
 * serialise), AccessExclusiveLock to delete.  After taking the lock the
 * cache is revalidated, so a user never works from a topic that a
 * committed change has replaced.  Creating a topic and adding partitions
 * also hold the creation lock (the object lock of kafka.topics with objid
 * 0, ShareUpdateExclusiveLock), one such transaction at a time: each checks
 * names and kafka.max_partitions against what committed.
 *
 * Cache invalidation: a change here registers a relcache invalidation of
 * kafka.topics, which every backend receives at commit; the callback drops
 * the whole cache (topic DDL is rare).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "common/settings.h"

typedef struct KpTopicEntry
{
	char		name[KP_TOPIC_NAME_MAX + 1];	/* hash key */
	KpTopic		topic;
} KpTopicEntry;

static HTAB *topic_cache = NULL;
static MemoryContext topic_cxt = NULL;
static Oid	topics_relid = InvalidOid;
static uint64 cache_generation = 0;
static bool callback_registered = false;

static void
topic_cache_reset(void)
{
	if (topic_cxt)
		MemoryContextDelete(topic_cxt);
	topic_cxt = NULL;
	topic_cache = NULL;
	topics_relid = InvalidOid;
	cache_generation++;
}

static void
topic_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == topics_relid)
		topic_cache_reset();
}

static void
topic_cache_init(void)
{
	HASHCTL		ctl;
	Oid			nsp;

	if (topic_cache)
		return;
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(topic_relcache_callback, (Datum) 0);
		callback_registered = true;
	}
	nsp = get_namespace_oid("kafka", true);
	topics_relid = OidIsValid(nsp) ? get_relname_relid("topics", nsp) : InvalidOid;
	if (!OidIsValid(topics_relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"kafka_pg\" is not installed in this database")));
	/* nothing here is meant for another build's catalog (stamp.c) */
	kp_catalog_stamp_check();

	topic_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg topics",
									  ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = KP_TOPIC_NAME_MAX + 1;
	ctl.entrysize = sizeof(KpTopicEntry);
	ctl.hcxt = topic_cxt;
	topic_cache = hash_create("kafka_pg topic cache", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

static int64
parse_long(const char *s)
{
	return strtoll(s, NULL, 10);
}

/* Parse effective config values into the struct the front doors use. */
static void
parse_topic_config(KpTopic *t)
{
	KpTopicConfig *c = &t->config;
	const char *v;

#define CONF(name) t->config_values[kp_config_index(name)]
	c->log.segment_bytes = parse_long(CONF("segment.bytes"));
	c->log.segment_ms = parse_long(CONF("segment.ms"));
	c->log.max_message_bytes = (int32) parse_long(CONF("max.message.bytes"));
	c->max_decompressed_message_bytes = (int32) parse_long(CONF("max.decompressed.message.bytes"));
	c->log.log_append_time = strcmp(CONF("message.timestamp.type"), "LogAppendTime") == 0;
	v = CONF("compression.type");
	if (strcmp(v, "producer") == 0)
		c->compression = -1;
	else if (strcmp(v, "uncompressed") == 0)
		c->compression = KP_COMPRESSION_NONE;
	else
	{
		KpCompression codec = KP_COMPRESSION_NONE;

		(void) kp_compression_from_name(v, &codec);
		c->compression = codec;
	}
	v = CONF("cleanup.policy");
	c->cleanup_delete = strstr(v, "delete") != NULL;
	c->cleanup_compact = strstr(v, "compact") != NULL;
	c->retention_ms = parse_long(CONF("retention.ms"));
	c->retention_bytes = parse_long(CONF("retention.bytes"));
	c->delete_retention_ms = parse_long(CONF("delete.retention.ms"));
	c->min_compaction_lag_ms = parse_long(CONF("min.compaction.lag.ms"));
	c->max_compaction_lag_ms = parse_long(CONF("max.compaction.lag.ms"));
	c->min_cleanable_dirty_ratio = strtod(CONF("min.cleanable.dirty.ratio"), NULL);
	c->file_delete_delay_ms = parse_long(CONF("file.delete.delay.ms"));
	c->min_insync_replicas = (int32) parse_long(CONF("min.insync.replicas"));
	c->timestamp_before_max_ms = parse_long(CONF("message.timestamp.before.max.ms"));
	c->timestamp_after_max_ms = parse_long(CONF("message.timestamp.after.max.ms"));
#undef CONF
}

/*
 * One query of topic_load, with one parameter, under the latest snapshot:
 * what is committed now, as PostgreSQL reads its own catalogs, not the
 * caller's snapshot (a listener request's, or a REPEATABLE READ
 * transaction's), which may predate the commit of a deletion whose lock
 * topic_open then takes at once: it would return a topic that no longer
 * exists, with partitions whose storage is gone.
 */
static int
load_query(Snapshot snapshot, const char *sql, Oid argtype, Datum arg, long tcount)
{
	SPIPlanPtr	plan = kp_spi_prepare(sql, 1, &argtype);

	if (plan == NULL)
		elog(ERROR, "kafka_pg: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	return kp_spi_execute_snapshot(plan, &arg, NULL, snapshot, InvalidSnapshot, true, false, tcount);
}

/*
 * Read a topic from the catalog into the cache.  Returns NULL if there is
 * no such topic.  Everything is read before the cache is touched: the SPI
 * queries take locks, which process invalidations, which may reset the
 * cache under our feet.  If one did (the generation moved), what was read
 * may be what a change committed since replaced: it is returned, to be
 * read again by the caller, but not cached (a cached entry would outlive
 * the invalidation that should have dropped it).
 */
static KpTopic *
topic_load(const char *name)
{
	uint64		generation = cache_generation;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	KpTopicEntry *entry;
	KpTopic		tmp;
	KpTopic		built;
	KpTopic    *t;
	int			i;
	bool		isnull;
	MemoryContext callercxt = CurrentMemoryContext;
	int			ret;
	int			noverrides;
	char	  **onames;
	char	  **ovalues;
	Snapshot	snapshot;
	MemoryContext cxt;

	args[0] = CStringGetTextDatum(name);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* one snapshot for the three queries: the topic as one commit left it */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ret = load_query(snapshot, "SELECT topic_id, topic_uuid, partition_count "
					 "FROM kafka.topics WHERE name = $1",
					 argtypes[0], args[0], 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: topic lookup failed");
	if (SPI_processed == 0)
	{
		UnregisterSnapshot(snapshot);
		SPI_finish();
		return NULL;
	}

	memset(&tmp, 0, sizeof(KpTopic));
	strlcpy(tmp.name, name, sizeof(tmp.name));
	tmp.topic_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	memcpy(&tmp.topic_uuid,
		   DatumGetUUIDP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)),
		   sizeof(pg_uuid_t));
	tmp.partition_count = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));

	argtypes[0] = INT4OID;
	args[0] = Int32GetDatum(tmp.topic_id);
	ret = load_query(snapshot, "SELECT partition, partition_id, xmin::text::bigint "
					 "FROM kafka.partitions WHERE topic_id = $1 ORDER BY partition",
					 argtypes[0], args[0], 0);
	if (ret != SPI_OK_SELECT || (int) SPI_processed != tmp.partition_count)
		elog(ERROR, "kafka_pg: topic \"%s\" has %d partitions in kafka.partitions, %d expected",
			 name, (int) SPI_processed, tmp.partition_count);

	tmp.partition_ids = MemoryContextAlloc(callercxt, sizeof(int64) * tmp.partition_count);
	tmp.partition_xmins = MemoryContextAlloc(callercxt, sizeof(TransactionId) * tmp.partition_count);
	for (i = 0; i < tmp.partition_count; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];

		if (DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull)) != i)
			elog(ERROR, "kafka_pg: topic \"%s\" is missing partition %d", name, i);
		tmp.partition_ids[i] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		tmp.partition_xmins[i] = (TransactionId)
			DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
	}

	ret = load_query(snapshot, "SELECT name, value FROM kafka.topic_config_overrides "
					 "WHERE topic_id = $1",
					 argtypes[0], args[0], 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: topic config lookup failed");
	noverrides = (int) SPI_processed;
	onames = MemoryContextAlloc(callercxt, sizeof(char *) * (noverrides + 1));
	ovalues = MemoryContextAlloc(callercxt, sizeof(char *) * (noverrides + 1));
	for (i = 0; i < noverrides; i++)
	{
		onames[i] = MemoryContextStrdup(callercxt,
										SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		ovalues[i] = MemoryContextStrdup(callercxt,
										 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
	UnregisterSnapshot(snapshot);
	SPI_finish();

	/*
	 * now into the cache, with no catalog access in between; made whole
	 * first, so that an ERROR part way (out of memory) leaves no entry
	 * pointing into the caller's memory
	 */
	topic_cache_init();
	cxt = generation == cache_generation ? topic_cxt : callercxt;
	built = tmp;
	t = &built;
	t->partition_ids = MemoryContextAlloc(cxt, sizeof(int64) * tmp.partition_count);
	memcpy(t->partition_ids, tmp.partition_ids, sizeof(int64) * tmp.partition_count);
	t->partition_xmins = MemoryContextAlloc(cxt, sizeof(TransactionId) * tmp.partition_count);
	memcpy(t->partition_xmins, tmp.partition_xmins, sizeof(TransactionId) * tmp.partition_count);
	t->config_values = MemoryContextAllocZero(cxt, sizeof(char *) * kp_topic_config_count);
	t->config_is_default = MemoryContextAllocZero(cxt, sizeof(bool) * kp_topic_config_count);
	for (i = 0; i < noverrides; i++)
	{
		int			idx = kp_config_index(onames[i]);

		if (idx >= 0)
			t->config_values[idx] = MemoryContextStrdup(cxt, ovalues[i]);
	}
	for (i = 0; i < kp_topic_config_count; i++)
	{
		if (t->config_values[i] == NULL)
		{
			t->config_values[i] = (char *) kp_topic_config_defs[i].default_value;
			t->config_is_default[i] = true;
		}
	}
	parse_topic_config(t);
	if (generation == cache_generation)
	{
		entry = hash_search(topic_cache, name, HASH_ENTER, NULL);
		entry->topic = built;
		return &entry->topic;
	}
	t = MemoryContextAlloc(callercxt, sizeof(KpTopic));
	*t = built;
	return t;
}

/*
 * Set by a process that must never wait for a topic's lock: the listener
 * workers, each of which serves all its connections from one loop, so that
 * a wait there (for a SQL transaction still open, for the log cleaner) would
 * stall every one of them.  kp_topic_open and kp_topic_create then take
 * their locks only when free (kafka_catalog.h).
 */
bool		kp_topic_locks_nowait = false;
uint64		kp_topic_lock_refusals = 0;

static const KpTopic *topic_open(const char *name, LOCKMODE lockmode, bool missing_ok,
								 bool nowait, bool *busy);

const KpTopic *
kp_topic_open(const char *name, LOCKMODE lockmode, bool missing_ok)
{
	return topic_open(name, lockmode, missing_ok, kp_topic_locks_nowait, NULL);
}

const KpTopic *
kp_topic_try_open(const char *name, LOCKMODE lockmode, bool *busy)
{
	if (busy)
		*busy = false;
	return topic_open(name, lockmode, true, true, busy);
}

/* What holds a topic's lock in a mode that conflicts with lockmode. */
static const char *
lock_holders(LOCKMODE lockmode)
{
	if (lockmode == AccessShareLock)
		return "A transaction still open is deleting the topic.";
	if (lockmode == AccessExclusiveLock)
		return "Transactions still open use the topic: SQL sessions that produced to it, consumed or fetched from it, changed it, or the log cleaner.";
	return "A transaction still open is deleting the topic, changing its configs or partitions or deleting its records, or the log cleaner is working on it.";
}

/*
 * Release the lock kp_topic_open took, before the end of the transaction:
 * for a worker that goes through every topic in one transaction (the
 * resolver), which would otherwise hold a lock per topic until it ends.
 * kafka.topics, locked by the lookup until then, keeps its relid stable.
 */
void
kp_topic_close(const KpTopic *topic, LOCKMODE lockmode)
{
	topic_cache_init();
	UnlockDatabaseObject(topics_relid, topic->topic_id, 0, lockmode);
}

static const KpTopic *
topic_open(const char *name, LOCKMODE lockmode, bool missing_ok, bool nowait,
		   bool *busy)
{
	for (;;)
	{
		KpTopicEntry *entry;
		KpTopic    *t;
		uint64		generation;
		int32		topic_id;

		topic_cache_init();

		/*
		 * Before the lookup: a change committed after what the lookup read (a
		 * deletion the load's queries or the lock below waited for) has sent
		 * its invalidation by the time its lock is free, and the generation
		 * tells it after the lock is taken.
		 */
		generation = cache_generation;
		if (strlen(name) > KP_TOPIC_NAME_MAX)
			entry = NULL;
		else
			entry = hash_search(topic_cache, name, HASH_FIND, NULL);
		t = entry ? &entry->topic : (strlen(name) > KP_TOPIC_NAME_MAX ? NULL : topic_load(name));
		if (t != NULL && generation != cache_generation)
			continue;			/* read while an invalidation came in: again */
		if (t == NULL)
		{
			if (missing_ok)
				return NULL;
			ereport(ERROR,
					(errcode(ERRCODE_KP_UNKNOWN_TOPIC_OR_PARTITION),
					 errmsg("topic \"%s\" does not exist", name)));
		}

		topic_id = t->topic_id;
		if (!nowait)
			LockDatabaseObject(topics_relid, topic_id, 0, lockmode);
		else if (!ConditionalLockDatabaseObject(topics_relid, topic_id, 0, lockmode))
		{
			if (busy)
				*busy = true;
			if (missing_ok)
				return NULL;
			kp_topic_lock_refusals++;
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("topic \"%s\" is locked by another transaction", name),
					 errdetail("%s", lock_holders(lockmode))));
		}
		AcceptInvalidationMessages();
		if (generation == cache_generation)
		{
			/*
			 * A copy in the caller's memory context: callers keep the topic
			 * across calls that take relation locks (the store opening
			 * kafka.store, SPI), and any of those may process a topic
			 * invalidation that drops the cache, this entry with it.
			 */
			return kp_topic_copy(t);
		}
		/* the topic changed while we waited: look again */
	}
}

KpTopic *
kp_topic_copy(const KpTopic *topic)
{
	KpTopic    *t = palloc(sizeof(KpTopic));
	int			n = topic->partition_count;
	int			i;

	*t = *topic;
	t->partition_ids = palloc(sizeof(int64) * Max(n, 1));
	memcpy(t->partition_ids, topic->partition_ids, sizeof(int64) * n);
	t->partition_xmins = palloc(sizeof(TransactionId) * Max(n, 1));
	memcpy(t->partition_xmins, topic->partition_xmins, sizeof(TransactionId) * n);
	t->config_values = palloc(sizeof(char *) * kp_topic_config_count);
	t->config_is_default = palloc(sizeof(bool) * kp_topic_config_count);
	for (i = 0; i < kp_topic_config_count; i++)
	{
		t->config_values[i] = topic->config_values[i] ? pstrdup(topic->config_values[i]) : NULL;
		t->config_is_default[i] = topic->config_is_default[i];
	}
	return t;
}

void
kp_topic_partition(const KpTopic *topic, int32 partition, KpPartitionRef *ref)
{
	if (partition < 0 || partition >= topic->partition_count)
		ereport(ERROR,
				(errcode(ERRCODE_KP_UNKNOWN_TOPIC_OR_PARTITION),
				 errmsg("partition %d of topic \"%s\" does not exist", partition, topic->name),
				 errdetail("The topic has %d partition%s, numbered from 0.",
						   topic->partition_count, topic->partition_count == 1 ? "" : "s")));
	ref->partition_id = topic->partition_ids[partition];
	ref->created_in_xact = TransactionIdIsCurrentTransactionId(topic->partition_xmins[partition]);
}

/* Whether the partition exists under the latest snapshot. */
static bool
partition_exists_now(int64 partition_id)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	bool		found;

	if (load_query(snapshot, "SELECT 1 FROM kafka.partitions WHERE partition_id = $1",
				   INT8OID, Int64GetDatum(partition_id), 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot look up partition " INT64_FORMAT, partition_id);
	found = SPI_processed > 0;
	UnregisterSnapshot(snapshot);
	return found;
}

/* GUC kafka.debug_views_skip_recheck (testing only), defined in src/main */
bool		kp_debug_views_skip_recheck = false;

bool
kp_catalog_partition_exists(int64 partition_id)
{
	bool		exists;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	exists = partition_exists_now(partition_id);
	SPI_finish();
	return exists;
}

bool
kp_topic_lock_partition_id(int64 partition_id, KpTopicLock *lock)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(partition_id)};
	int32		topic_id;
	bool		isnull;
	bool		exists;
	Oid			relid;

	lock->held = false;
	kp_catalog_stamp_check();	/* the views' per-partition functions */
	topic_cache_init();
	relid = topics_relid;		/* the queries below may reset the cache */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("SELECT topic_id FROM kafka.partitions WHERE partition_id = $1",
								 1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "cannot look up partition " INT64_FORMAT, partition_id);
	if (SPI_processed == 0)
	{
		SPI_finish();
		ereport(ERROR,
				(errcode(ERRCODE_KP_UNKNOWN_TOPIC_OR_PARTITION),
				 errmsg("partition id " INT64_FORMAT " does not exist", partition_id)));
	}
	topic_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/*
	 * Its topic's lock, as every user of a topic holds one, and then whether
	 * it still exists: a deletion that committed since the caller's snapshot
	 * (or while we waited for the lock) has dropped its storage, which the
	 * store must not be asked to load.  (A test skips both, to reach the
	 * store's own check: kafka.debug_views_skip_recheck.)
	 */
	if (kp_debug_views_skip_recheck)
	{
		SPI_finish();
		return true;
	}
	LockDatabaseObject(relid, topic_id, 0, AccessShareLock);
	lock->held = true;
	lock->relid = relid;
	lock->topic_id = topic_id;
	AcceptInvalidationMessages();
	exists = partition_exists_now(partition_id);
	SPI_finish();
	if (!exists)
		kp_topic_unlock_partition_id(lock);
	return exists;
}

void
kp_topic_unlock_partition_id(const KpTopicLock *lock)
{
	if (lock->held)
		UnlockDatabaseObject(lock->relid, lock->topic_id, 0, AccessShareLock);
}

/* What Kafka's Topic.validate finds wrong with a topic name. */
typedef enum TopicNameProblem
{
	NAME_OK,
	NAME_EMPTY,
	NAME_DOTS,					/* "." or ".." */
	NAME_TOO_LONG,
	NAME_BAD_CHARACTER
} TopicNameProblem;

static TopicNameProblem
topic_name_problem(const char *name)
{
	const char *p;

	if (name[0] == '\0')
		return NAME_EMPTY;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return NAME_DOTS;
	if (strlen(name) > KP_TOPIC_NAME_MAX)
		return NAME_TOO_LONG;
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return NAME_BAD_CHARACTER;
	return NAME_OK;
}

/* Kafka's Topic.validate: length, legal characters, not "." or "..". */
void
kp_topic_check_name(const char *name)
{
	switch (topic_name_problem(name))
	{
		case NAME_OK:
			break;
		case NAME_EMPTY:
			ereport(ERROR,
					(errcode(ERRCODE_KP_INVALID_TOPIC),
					 errmsg("topic name is empty")));
			break;
		case NAME_DOTS:
			ereport(ERROR,
					(errcode(ERRCODE_KP_INVALID_TOPIC),
					 errmsg("topic name cannot be \"%s\"", name)));
			break;
		case NAME_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_KP_INVALID_TOPIC),
					 errmsg("topic name is %d characters long, the maximum is %d",
							(int) strlen(name), KP_TOPIC_NAME_MAX)));
			break;
		case NAME_BAD_CHARACTER:
			ereport(ERROR,
					(errcode(ERRCODE_KP_INVALID_TOPIC),
					 errmsg("topic name \"%s\" is illegal", name),
					 errdetail("It contains a character other than ASCII alphanumerics, '.', '_' and '-'.")));
			break;
	}
}

/*
 * The same rules in Kafka 4.4's words (Topic.validate's "Topic name is
 * invalid: ..."), for a wire answer's INVALID_TOPIC_EXCEPTION; NULL if the
 * name is valid.
 */
char *
kp_topic_name_invalid(const char *name)
{
	switch (topic_name_problem(name))
	{
		case NAME_OK:
			break;
		case NAME_EMPTY:
			return pstrdup("Topic name is invalid: the empty string is not allowed");
		case NAME_DOTS:
			return psprintf("Topic name is invalid: '%s' is not allowed", name);
		case NAME_TOO_LONG:
			return psprintf("Topic name is invalid: the length of '%s' is longer than the max allowed length %d",
							name, KP_TOPIC_NAME_MAX);
		case NAME_BAD_CHARACTER:
			return psprintf("Topic name is invalid: '%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
							name);
	}
	return NULL;
}

/*
 * Kafka's internal topics (Topic.INTERNAL_TOPICS, and KRaft's metadata
 * log): kafka_pg keeps what they hold in its catalog (committed offsets,
 * transactions, share-group state; the catalog is the metadata), so no
 * topic of these names is made: a client that asks for one would get a
 * plain topic it could write to, where Kafka refuses appends.
 */
bool
kp_topic_reserved(const char *name)
{
	static const char *const reserved[] = {
		"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"
	};
	int			i;

	for (i = 0; name && i < lengthof(reserved); i++)
		if (strcmp(name, reserved[i]) == 0)
			return true;
	return false;
}

static void
check_partition_count(int32 partitions)
{
	if (partitions <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("number of partitions must be larger than 0, got %d", partitions)));
	if (partitions > kp_max_partitions)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("a topic cannot have %d partitions, the limit is kafka.max_partitions (%d)",
						partitions, kp_max_partitions)));
}

static void
spi_exec(const char *sql, int nargs, Oid *types, Datum *values, int expect)
{
	int			ret = kp_spi_execute_with_args(sql, nargs, types, values, NULL, false, 0);

	if (ret != expect)
		elog(ERROR, "kafka_pg: catalog statement failed (%d): %s", ret, sql);
}

/*
 * The topic whose name is name or differs from it only in '.' against '_'
 * (Kafka refuses such a pair: its metric names cannot tell them apart), as
 * the transaction sees the catalog; palloc'd in the context SPI was
 * connected from, NULL if none.  Inside an SPI connection.
 */
static char *
existing_topic(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	char	   *found;
	char	   *copy;

	values[0] = CStringGetTextDatum(name);
	spi_exec("SELECT name FROM kafka.topics WHERE translate(name, '.', '_') = translate($1, '.', '_')",
			 1, types, values, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	found = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	copy = SPI_palloc(strlen(found) + 1);
	strcpy(copy, found);
	return copy;
}

/*
 * The wire's CreateTopics words a collision as Kafka's controller does
 * ("Topic 'a.b' collides with existing topic: a_b"), so it needs the other
 * name: a topic other than name whose name differs from it only in '.'
 * against '_', or NULL.
 */
char *
kp_topic_colliding(const char *name)
{
	char	   *existing;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	existing = existing_topic(name);
	SPI_finish();
	if (existing != NULL && strcmp(existing, name) == 0)
		return NULL;
	return existing;
}

/*
 * After partitions were added (in SPI): every partition of the database
 * must fit the store's shared map, kafka.max_partitions entries, or the
 * server would refuse them at their first use after its next start (the
 * resolver loads every partition then: "too many partitions in use").
 */
static void
check_total_partitions(void)
{
	bool		isnull;
	int64		total;

	spi_exec("SELECT count(*) FROM kafka.partitions", 0, NULL, NULL, SPI_OK_SELECT);
	total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (total > kp_max_partitions)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("the topics would have %lld partitions in all, the limit is kafka.max_partitions (%d)",
						(long long) total, kp_max_partitions),
				 errhint("Raise kafka.max_partitions and restart the server, or delete topics.")));
}

/* Validate and upsert (or with NULL value, delete) config overrides. */
static void
apply_configs(int32 topic_id, const KpConfigSetting *configs, int nconfigs)
{
	int			i;

	for (i = 0; i < nconfigs; i++)
	{
		Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
		Datum		values[3];

		values[0] = Int32GetDatum(topic_id);
		values[1] = CStringGetTextDatum(configs[i].name);
		if (configs[i].value == NULL)
		{
			if (kp_config_index(configs[i].name) < 0)
				(void) kp_config_check(configs[i].name, "");	/* unknown key error */
			spi_exec("DELETE FROM kafka.topic_config_overrides WHERE topic_id = $1 AND name = $2",
					 2, types, values, SPI_OK_DELETE);
			continue;
		}
		values[2] = CStringGetTextDatum(kp_config_check(configs[i].name, configs[i].value));
		spi_exec("INSERT INTO kafka.topic_config_overrides (topic_id, name, value) "
				 "VALUES ($1, $2, $3) ON CONFLICT (topic_id, name) DO UPDATE SET value = EXCLUDED.value",
				 3, types, values, SPI_OK_INSERT);
	}
}

static void
invalidate_topics(void)
{
	topic_cache_init();
	CacheInvalidateRelcacheByRelid(topics_relid);
}

/*
 * The creation lock (kp_topic_create, kp_topic_add_partitions): waiting for
 * it, or only if free.
 */
static bool
lock_creation(bool nowait)
{
	topic_cache_init();
	if (nowait)
		return ConditionalLockDatabaseObject(topics_relid, 0, 0, ShareUpdateExclusiveLock);
	LockDatabaseObject(topics_relid, 0, 0, ShareUpdateExclusiveLock);
	return true;
}

bool
kp_topic_try_lock_creation(void)
{
	return lock_creation(true);
}

void
kp_topic_create(const char *name, int32 partitions,
				const KpConfigSetting *configs, int nconfigs)
{
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	int32		topic_id;
	bool		isnull;
	bool		locked;
	char	   *existing;
	int			i;

	kp_topic_check_name(name);
	/* Kafka's words for its __cluster_metadata */
	if (kp_topic_reserved(name))
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_REQUEST),
				 errmsg("Creation of internal topic %s is prohibited.", name),
				 errdetail("kafka_pg keeps committed offsets, transactions, share-group state and the cluster's metadata in its catalog tables, not in topics.")));
	check_partition_count(partitions);
	for (i = 0; i < nconfigs; i++)
		if (configs[i].value != NULL)
			(void) kp_config_check(configs[i].name, configs[i].value);
		else
			ereport(ERROR,
					(errcode(ERRCODE_KP_INVALID_CONFIG),
					 errmsg("topic config \"%s\" has a null value", configs[i].name)));

	topic_cache_init();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * One creator at a time: the check below for a name that collides with
	 * another, and check_total_partitions, see only what committed.  Held to
	 * the end of the transaction, so by a SQL transaction that created a
	 * topic until it ends.  A process that waits for no lock
	 * (kp_topic_locks_nowait) still gets TOPIC_ALREADY_EXISTS for a name that
	 * is taken: a row found is there whatever commits meanwhile.
	 */
	locked = lock_creation(kp_topic_locks_nowait);	/* refused below if not */

	existing = existing_topic(name);
	if (existing != NULL)
	{
		if (strcmp(existing, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_KP_TOPIC_ALREADY_EXISTS),
					 errmsg("topic \"%s\" already exists", name)));
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_TOPIC),
				 errmsg("topic \"%s\" collides with existing topic \"%s\"", name, existing),
				 errdetail("Kafka treats '.' and '_' in topic names alike in metric names, so it refuses names that differ only there.")));
	}
	if (!locked)
	{
		kp_topic_lock_refusals++;
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("topic \"%s\" cannot be created now: another transaction is creating a topic or adding partitions", name),
				 errdetail("Topics are created and partitions added one transaction at a time, and a SQL transaction that did either is still open.")));
	}

	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(partitions);
	spi_exec("INSERT INTO kafka.topics (name, partition_count) VALUES ($1, $2) RETURNING topic_id",
			 2, types, values, SPI_OK_INSERT_RETURNING);
	topic_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	types[0] = INT4OID;
	values[0] = Int32GetDatum(topic_id);
	spi_exec("INSERT INTO kafka.partitions (topic_id, partition) "
			 "SELECT $1, g FROM generate_series(0, $2 - 1) g",
			 2, types, values, SPI_OK_INSERT);
	check_total_partitions();
	apply_configs(topic_id, configs, nconfigs);
	SPI_finish();
	invalidate_topics();
}

void
kp_topic_delete(const char *name)
{
	const KpTopic *t = kp_topic_open(name, AccessExclusiveLock, false);
	int			i;
	Oid			types[1] = {INT4OID};
	Datum		values[1];

	for (i = 0; i < t->partition_count; i++)
		kp_log_drop_partition(t->partition_ids[i]);

	values[0] = Int32GetDatum(t->topic_id);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spi_exec("DELETE FROM kafka.topics WHERE topic_id = $1", 1, types, values, SPI_OK_DELETE);
	SPI_finish();
	invalidate_topics();
}

void
kp_topic_add_partitions(const char *name, int32 partitions)
{
	const KpTopic *t;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		values[3];
	bool		locked;

	/*
	 * The creation lock first (before the topic's, so that a transaction that
	 * created a topic and then adds partitions to another cannot deadlock
	 * with one that adds partitions the other way round): two transactions
	 * adding partitions at once, or creating a topic meanwhile, would each
	 * count against kafka.max_partitions only what committed
	 * (check_total_partitions), and together pass it.
	 */
	locked = lock_creation(kp_topic_locks_nowait);	/* refused below if not */
	t = kp_topic_open(name, ShareUpdateExclusiveLock, false);

	check_partition_count(partitions);
	if (partitions < t->partition_count)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("topic \"%s\" has %d partitions and cannot shrink to %d",
						name, t->partition_count, partitions),
				 errdetail("Kafka only ever adds partitions: removing one would lose its records and move keys between partitions.")));
	if (partitions == t->partition_count)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("topic \"%s\" already has %d partitions", name, partitions)));
	if (!locked)
	{
		kp_topic_lock_refusals++;
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("partitions cannot be added to topic \"%s\" now: another transaction is creating a topic or adding partitions", name),
				 errdetail("Topics are created and partitions added one transaction at a time, and a SQL transaction that did either is still open.")));
	}

	values[0] = Int32GetDatum(t->topic_id);
	values[1] = Int32GetDatum(t->partition_count);
	values[2] = Int32GetDatum(partitions);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spi_exec("INSERT INTO kafka.partitions (topic_id, partition) "
			 "SELECT $1, g FROM generate_series($2, $3 - 1) g",
			 3, types, values, SPI_OK_INSERT);
	check_total_partitions();
	spi_exec("UPDATE kafka.topics SET partition_count = $3 WHERE topic_id = $1 AND $2 IS NOT NULL",
			 3, types, values, SPI_OK_UPDATE);
	SPI_finish();
	invalidate_topics();
}

void
kp_topic_alter_configs(const char *name, const KpConfigSetting *configs, int nconfigs)
{
	const KpTopic *t = kp_topic_open(name, ShareUpdateExclusiveLock, false);
	int32		topic_id = t->topic_id;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	apply_configs(topic_id, configs, nconfigs);
	SPI_finish();
	invalidate_topics();
}

void
kp_topic_drop_all_storage(void)
{
	int			i;
	int64	   *ids;
	int			n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spi_exec("SELECT partition_id FROM kafka.partitions", 0, NULL, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	for (i = 0; i < n; i++)
		kp_log_drop_partition(ids[i]);
	kp_store_drop_directory();
}

/*
 * The name of the topic with Kafka topic id uuid, or NULL.  Clients from
 * Fetch v13 and Produce v13 on name topics by id in every request, so the
 * cache is asked first; the catalog only on a miss.
 */
char *
kp_topic_name_for_uuid(const pg_uuid_t *uuid)
{
	HASH_SEQ_STATUS seq;
	KpTopicEntry *entry;
	Oid			argtypes[1] = {UUIDOID};
	Datum		args[1];
	char	   *found = NULL;
	MemoryContext caller = CurrentMemoryContext;

	topic_cache_init();
	hash_seq_init(&seq, topic_cache);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (memcmp(entry->topic.topic_uuid.data, uuid->data, UUID_LEN) == 0)
		{
			found = pstrdup(entry->topic.name);
			hash_seq_term(&seq);
			return found;
		}
	}

	args[0] = UUIDPGetDatum(uuid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("SELECT name FROM kafka.topics WHERE topic_uuid = $1",
								 1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		found = MemoryContextStrdup(caller,
									SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return found;
}

/*
 * The Kafka topic id of topic name, read with a fresh snapshot so that a
 * topic created earlier in this transaction is seen.  false if there is no
 * such topic.
 */
bool
kp_topic_uuid_by_name(const char *name, pg_uuid_t *out)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		found = false;

	memset(out, 0, sizeof(pg_uuid_t));
	args[0] = CStringGetTextDatum(name);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("SELECT topic_uuid FROM kafka.topics WHERE name = $1",
								 1, argtypes, args, NULL, false, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			memcpy(out->data, DatumGetUUIDP(d)->data, UUID_LEN);
			found = true;
		}
	}
	SPI_finish();
	return found;
}

/*
 * The names of every topic, sorted as Kafka sorts them (Java's
 * String.compareTo: byte order for the ASCII names Kafka allows, hence
 * COLLATE "C"; DescribeTopicPartitions' cursor paging walks them in this
 * order).  Returns the count; *names is palloc'd in the caller's memory
 * context.  Takes no lock: a topic deleted meanwhile is found missing when
 * the caller opens it.
 */
int
kp_topic_list_names(char ***names)
{
	MemoryContext caller = CurrentMemoryContext;
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SELECT name FROM kafka.topics ORDER BY name COLLATE \"C\"",
					   true, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot list topics");
	n = (int) SPI_processed;
	/* outside SPI's memory: SPI_finish frees that */
	*names = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*names)[i] = MemoryContextStrdup(caller,
										  SPI_getvalue(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return n;
}
