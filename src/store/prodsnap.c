/*-------------------------------------------------------------------------
 *
 * prodsnap.c
 *	  Producer-state snapshots: what recovery rebuilds, kept so that it
 *	  need not walk the whole active segment after every start.
 *
 * Recovery (recovery.c) rebuilds a partition's open transactions and its
 * idempotent producers' recent batches by reading the header of every
 * batch of the active segment (and, for the transactions, from the
 * segment's first_open_offset): 1.4 us a batch with the log in the page
 * cache, 10 us read from disk (docs/performance.md), up to a segment.bytes
 * of log per partition after every start and every promotion of a standby.  Kafka writes its producer state to a snapshot
 * file at a segment roll and at a clean shutdown, and recovers from the
 * last snapshot on; this is the same, in the store.
 *
 * A snapshot is taken under the partition's appender lock, so it describes
 * exactly the log below the log end offset of that moment: the open
 * transactions (as undecided: recovery decides SQL ones from the commit
 * log, and the coordinator redrives wire ones, as after a full walk) and
 * the producers' recent batches.  It is written into the active segment's
 * metapage with generic WAL (segment.c), after the WAL of every batch it
 * describes and of every ABORT marker's index entry (written under the same
 * lock), so replay never has the snapshot without the log below it; a
 * standby has it by replay.  Recovery uses it only if it names the active
 * segment and the batch at its position starts at its offset, and walks
 * from there; otherwise it walks as before.  A snapshot may know producers
 * seen only in older segments (the live state kept them across the roll),
 * which a full walk forgets: Kafka keeps them too.
 *
 * Who takes them: the resolver (src/txn/resolver.c), once a second for
 * each partition whose active segment grew by KP_PRODSNAP_BYTES since its
 * last snapshot, and for every partition that changed at all when it shuts
 * down (a clean shutdown: the next start walks nothing).  It holds the
 * partition's topic lock (AccessShareLock) as an append does: a topic being
 * deleted is not written to, so no snapshot's WAL record can follow the
 * commit record that drops its segment (replaying a change to a dropped
 * relation's page is an invalid-page PANIC on a standby).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/pg_list.h"

#include "store/store_int.h"

/*
 * A partition's active segment is snapshotted again once it has grown this
 * much: recovery then walks at most this much (plus what came since the
 * last upkeep) of the active segment, 8 MB being ~512 batches of 16 KB or
 * a few milliseconds.  One metapage record per 8 MB of log.
 */
#define KP_PRODSNAP_BYTES	(8 * 1024 * 1024)

/* Take one, of the active segment, under the appender lock */
static void
prodsnap_take(KpPartitionState *state)
{
	KpProducerSnapshot *snap = palloc0(sizeof(KpProducerSnapshot));
	Relation	rel;
	int			i;

	Assert(state->loaded && OidIsValid(state->active_relnode));
	snap->magic = KP_PRODSNAP_MAGIC;
	snap->version = KP_PRODSNAP_VERSION;
	snap->partition_id = state->key.partition_id;
	snap->relnode = state->active_relnode;
	snap->offset = state->log_end_offset;
	snap->pos = state->active_size;
	snap->ntxns = state->ntxns;
	for (i = 0; i < state->ntxns; i++)
	{
		snap->txns[i].producer_id = state->txns[i].producer_id;
		snap->txns[i].first_offset = state->txns[i].first_offset;
		snap->txns[i].producer_epoch = state->txns[i].producer_epoch;
		snap->txns[i].outcome = KP_TXN_OPEN;
		snap->txns[i].marker_epoch = -1;
	}
	for (i = 0; i < KP_MAX_PRODUCERS; i++)
	{
		snap->producers[i] = state->producers[i];
		snap->producers[i].last_used = 0;
	}

	rel = kp_segment_open(state->active_relnode);
	kp_segment_write_prodsnap(rel, snap);
	kp_segment_close(rel);
	pfree(snap);
	state->snapshot_relnode = state->active_relnode;
	state->snapshot_size = state->active_size;
	ereport(DEBUG1,
			(errmsg_internal("kafka_pg: producer-state snapshot of partition %lld at offset %lld (%d open transactions)",
							 (long long) state->key.partition_id,
							 (long long) state->log_end_offset, state->ntxns)));
}

/* grown by KP_PRODSNAP_BYTES since the last snapshot */
static bool
snapshot_due(const KpPartitionState *state)
{
	if (!OidIsValid(state->active_relnode))
		return false;
	if (state->snapshot_relnode != state->active_relnode)
		return state->active_size >= KP_PRODSNAP_BYTES;
	return state->active_size - state->snapshot_size >= KP_PRODSNAP_BYTES;
}

/* changed at all since the last snapshot */
static bool
snapshot_stale(const KpPartitionState *state)
{
	if (!OidIsValid(state->active_relnode))
		return false;
	return state->snapshot_relnode != state->active_relnode ||
		state->active_size != state->snapshot_size;
}

List *
kp_log_snapshot_due(bool all)
{
	return kp_partition_ids(all ? snapshot_stale : snapshot_due);
}

bool
kp_log_snapshot_partition(int64 partition_id, bool all)
{
	KpPartitionState *state = kp_partition_lock(partition_id, false);
	bool		taken = false;

	if (state == NULL)
		return false;
	if (state->loaded && (all ? snapshot_stale(state) : snapshot_due(state)))
	{
		prodsnap_take(state);
		taken = true;
	}
	kp_partition_unlock(state);
	return taken;
}
