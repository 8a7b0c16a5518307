/*-------------------------------------------------------------------------
 *
 * offsets.c
 *	  Committed offsets: the one writer, its fences, and the readers.
 *
 * Every committed offset, whoever commits it (OffsetCommit on the wire,
 * kafka.consume and kafka.group_poll in SQL), is written by
 * kp_group_commit_offsets, after the committer's fence (group.h):
 *
 * - a classic member must be in the group with the current generation,
 *   and not between its join and its assignment (REBALANCE_IN_PROGRESS),
 *   as Kafka's GroupCoordinator;
 * - a consumer-protocol member must commit with its current member epoch
 *   (STALE_MEMBER_EPOCH, KIP-848), on the wire and from SQL alike;
 * - a committer without a member (generation -1: a Java assign() consumer;
 *   kafka.consume) must not commit partitions that members hold: on the
 *   wire, as Kafka, only while the group has no members; from SQL, only
 *   partitions no member holds by its current assignment (kafka.consume
 *   already skips them; this catches a member that got one since);
 * - a transaction's offsets (TxnOffsetCommit) are fenced as OffsetCommit when
 *   they are sent, and written unfenced at the COMMIT decision
 *   (KP_COMMIT_TRANSACTION, src/txn/coordinator.c), each after its
 *   partition's offset lock (lock_transaction_offset).
 *
 * The wire fence takes the group lock.  The SQL fences do not: their
 * commits happen inside the caller's transaction, which may last long,
 * and must not hold the group lock (and so every heartbeat of the group)
 * until it ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "group/assignor.h"
#include "group/group_int.h"
#include "protocol/errors.h"

/* Kafka's offset.metadata.max.bytes */
#define KP_OFFSET_METADATA_MAX	4096

static bool lock_offset(const char *group_id, const char *topic, int32 partition, bool wait);

/*
 * A transaction's offset, written at its COMMIT decision (EndTxn): the
 * partition's offset lock first, as every writer of the row takes it
 * (kafka.consume and kafka.group_poll hold it to the end of their
 * transaction, the wire OffsetCommit tries it).  A process that must not
 * wait (kp_group_locks_nowait: the listener) only tries it, and is refused
 * with ERRCODE_LOCK_NOT_AVAILABLE: the listener runs the EndTxn again later
 * (nothing was committed) instead of waiting in the row's lock.
 */
static void
lock_transaction_offset(const char *group_id, const char *topic, int32 partition)
{
	if (!lock_offset(group_id, topic, partition, !kp_group_locks_nowait))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("the committed offset of group \"%s\" for partition %d of topic \"%s\" is locked by another transaction",
						group_id, partition, topic),
				 errdetail("A SQL transaction that consumed the partition for the group (kafka.consume, kafka.group_poll) is still open.")));
}

/*
 * OffsetCommit's fence: takes the group lock, creating the group for a
 * commit without a generation.  A commit with one (a member's) to a group
 * that does not exist is GROUP_ID_NOT_FOUND, as Kafka's validateOffsetCommit
 * answers, which the callers give older requests as ILLEGAL_GENERATION
 * (OffsetCommit below v9, TxnOffsetCommit below v6), as Kafka does.
 */
static int16
wire_fence(const KpCommitter *c)
{
	KpGroupRow	g;
	int32		epoch;

	kp_cat_group_read(c->group_id, c->generation_id < 0, true, &g);
	if (!g.exists)
	{
		/* unless a transaction still open is creating it: wait, or refuse */
		kp_cat_group_lock_creation(c->group_id);
		kp_cat_group_read(c->group_id, false, true, &g);
		if (!g.exists)
			return KP_ERR_GROUP_ID_NOT_FOUND;
	}
	if (c->generation_id < 0)
	{
		KpMemberRow *m;
		int			n = kp_cat_members_load(c->group_id, &m);

		/*
		 * Generation (or member epoch) -1: the admin client or a consumer
		 * that does not use group management (assign()).  As Kafka's
		 * validateOffsetCommit, such a commit is taken while the group has no
		 * members (pending ones are none), whatever member id it carries
		 * (librdkafka's consumer protocol sends its own random one); while it
		 * has members, one without a member id or instance id is refused, one
		 * with either is checked below.
		 */
		if (kp_group_count_members(m, n) == 0)
			return KP_ERR_NONE;
		if ((c->member_id == NULL || c->member_id[0] == '\0') && c->group_instance_id == NULL)
			return KP_ERR_UNKNOWN_MEMBER_ID;
	}
	if (c->member_id && c->member_id[0] && strcmp(g.protocol_type, "consumer") == 0 &&
		(epoch = kp_cat_consumer_member_epoch(c->group_id, c->member_id)) != -1)
	{
		/*
		 * KIP-848 members commit with their member epoch, in OffsetCommit v9+
		 * (Kafka refuses an older one: UNSUPPORTED_VERSION)
		 */
		if (c->before_v9)
			return KP_ERR_UNSUPPORTED_VERSION;
		if (c->generation_id != epoch)
			return KP_ERR_STALE_MEMBER_EPOCH;
	}
	else
	{
		KpMemberRow *m;
		int			n = kp_cat_members_load(c->group_id, &m);
		KpMemberRow *me = kp_group_find_member(m, n, c->member_id);
		int16		code = kp_group_check_instance(m, n, c->member_id, c->group_instance_id);

		if (code != KP_ERR_NONE)
			return code;
		if (me == NULL || KP_MEMBER_PENDING(me))
			return KP_ERR_UNKNOWN_MEMBER_ID;
		if (c->generation_id != g.generation)
			return KP_ERR_ILLEGAL_GENERATION;
		if (strcmp(g.state, "CompletingRebalance") == 0)
		{
			/*
			 * As Kafka: a member may commit while the group prepares a
			 * rebalance (it commits what it processed before rejoining), not
			 * between the join and the assignment.
			 */
			return KP_ERR_REBALANCE_IN_PROGRESS;
		}
	}
	return KP_ERR_NONE;
}

int16
kp_group_check_offset_fetch(const char *group_id, const char *member_id, int32 member_epoch)
{
	KpGroupRow	g;
	int32		epoch;

	if (member_id == NULL && member_epoch < 0)
		return KP_ERR_NONE;
	kp_cat_group_read(group_id, false, false, &g);
	if (!g.exists || strcmp(g.group_type, "consumer") != 0)
		return KP_ERR_NONE;
	epoch = kp_cat_consumer_member_epoch(group_id, member_id ? member_id : "");
	if (epoch == -1)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	if (epoch != member_epoch)
		return KP_ERR_STALE_MEMBER_EPOCH;
	return KP_ERR_NONE;
}

/* kafka.group_poll's fence: the member epoch its assignment was read at. */
static int16
sql_member_fence(const KpCommitter *c)
{
	int32		epoch = kp_cat_consumer_member_epoch(c->group_id, c->member_id ? c->member_id : "");

	if (epoch == -1)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	if (epoch != c->generation_id)
		return KP_ERR_STALE_MEMBER_EPOCH;
	return KP_ERR_NONE;
}

/* kafka.consume's fence, per partition: no member may hold it. */
static bool
held_by_member(const char *group_id, const char *topic, int32 partition)
{
	int32	   *held;
	int			n = kp_group_held_partitions(group_id, topic, &held);
	int			i;

	for (i = 0; i < n; i++)
		if (held[i] == partition)
			return true;
	return false;
}

int16
kp_group_commit_offsets(const KpCommitter *c, int n, KpOffsetToCommit *offsets)
{
	int16		code = KP_ERR_NONE;
	int			i;

	if (c->group_id == NULL || c->group_id[0] == '\0')
		code = KP_ERR_INVALID_GROUP_ID;
	else if (c->kind == KP_COMMIT_WIRE)
		code = wire_fence(c);
	else if (c->kind == KP_COMMIT_SQL_MEMBER)
		code = sql_member_fence(c);
	else
		kp_cat_group_ensure(c->group_id);	/* so that the group is listed */
	for (i = 0; i < n; i++)
	{
		KpOffsetToCommit *o = &offsets[i];

		o->error_code = code;
		if (code != KP_ERR_NONE)
			continue;
		if (o->metadata.len > KP_OFFSET_METADATA_MAX)
			o->error_code = KP_ERR_OFFSET_METADATA_TOO_LARGE;
		else if (c->kind == KP_COMMIT_SQL_SESSION &&
				 held_by_member(c->group_id, o->topic, o->partition))
			o->error_code = KP_ERR_UNKNOWN_MEMBER_ID;
		else
		{
			if (c->kind == KP_COMMIT_TRANSACTION)
				lock_transaction_offset(c->group_id, o->topic, o->partition);
			kp_cat_offset_store(c->group_id, o->topic, o->partition, o->offset,
								o->leader_epoch, &o->metadata);
		}
	}
	return code;
}

static bool
lock_offset(const char *group_id, const char *topic, int32 partition, bool wait)
{
	char	   *key = psprintf("%s/%s", group_id, topic);
	uint32		h = hash_bytes((const unsigned char *) key, strlen(key));
	LOCKTAG		tag;

	/* the same tag as pg_advisory_xact_lock(int4, int4) */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, h, (uint32) partition, 2);
	pfree(key);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

bool
kp_group_try_lock_offset(const char *group_id, const char *topic, int32 partition)
{
	return lock_offset(group_id, topic, partition, false);
}

void
kp_group_lock_offset(const char *group_id, const char *topic, int32 partition)
{
	(void) lock_offset(group_id, topic, partition, true);
}

int64
kp_group_fetch_offset(const char *group_id, const char *topic, int32 partition,
					  bool for_update, int32 *leader_epoch, KpBlob *metadata)
{
	return kp_cat_offset_fetch(group_id, topic, partition, for_update, leader_epoch, metadata);
}

int
kp_group_committed_partitions(const char *group_id, char ***topics, int32 **partitions)
{
	return kp_cat_offsets_list(group_id, topics, partitions);
}

/*
 * Partitions of topic that members hold, for SQL consumers to keep off: by
 * the assignment the leader gave (classic) or the coordinator gave and the
 * member last reported owning (KIP-848).  No group lock: SQL consumers must
 * not queue behind the coordinator.
 */
int
kp_group_held_partitions(const char *group_id, const char *topic, int32 **partitions)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	int			i;
	int			count = 0;

	*partitions = palloc(sizeof(int32));
	kp_cat_group_read(group_id, false, false, &g);
	if (!g.exists || strcmp(g.state, "Empty") == 0 ||
		strcmp(g.protocol_type, "consumer") != 0)
		return 0;
	n = kp_cat_members_load(group_id, &m);
	for (i = 0; i < n; i++)
	{
		int32	   *mine;
		int			k;

		if (strcmp(g.group_type, "consumer") == 0)
		{
			KpTPSet		held;
			KpTPSet		owned;
			int			j;

			kp_tps_parse(m[i].assigned, &held);
			kp_tps_parse(m[i].owned, &owned);
			for (j = 0; j < owned.n; j++)
				kp_tps_add(&held, owned.items[j].topic, owned.items[j].partition);
			mine = palloc(sizeof(int32) * Max(held.n, 1));
			k = 0;
			for (j = 0; j < held.n; j++)
				if (strcmp(held.items[j].topic, topic) == 0)
					mine[k++] = held.items[j].partition;
		}
		else
			k = kp_group_assignment_partitions(m[i].assignment, topic, &mine);
		if (k == 0)
			continue;
		*partitions = repalloc(*partitions, sizeof(int32) * (count + k));
		memcpy(*partitions + count, mine, sizeof(int32) * k);
		count += k;
	}
	return count;
}
