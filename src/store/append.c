/*-------------------------------------------------------------------------
 *
 * append.c
 *	  The one path that writes a partition: kp_log_append.
 *
 * The SQL API (kafka.produce), the wire listener (Produce) and the
 * transaction markers (txnstate.c) all append through here.  With the
 * partition's appender lock held it
 *
 *	1. writes the markers of transactions decided since the last append,
 *	   so a marker always precedes what was appended after its transaction
 *	   ended;
 *	2. checks an idempotent producer's batch (producer.c): a duplicate gets
 *	   its original offsets and is not written again;
 *	3. rolls to a new segment if the batch does not fit (segment.bytes) or
 *	   the active one is too old (segment.ms);
 *	4. assigns the batch's base offset (= the log end offset), patches it
 *	   into the batch header (outside the CRC), stamps LogAppendTime if the
 *	   topic says so, and writes the bytes (segment.c);
 *	5. advances the log end offset, records the producer's batch, opens the
 *	   batch's transaction if it has one, and recomputes the LSO.
 *
 * Offsets are assigned only here, only under the appender lock, so they
 * strictly increase with no holes however many backends and listener
 * workers append at once.  An error while rolling or writing leaves the
 * state marked unloaded: the next access recovers the partition from the
 * store (recovery.c) and cuts a half-written batch as it would after a
 * crash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "codec/codec.h"
#include "store/store_int.h"

static bool
needs_roll(KpPartitionState *state, const KpLogConfig *config, size_t len)
{
	if (!OidIsValid(state->active_relnode))
		return true;
	if (state->active_size == 0)
		return false;
	if (state->active_size + (int64) len > config->segment_bytes)
		return true;
	if (config->segment_ms > 0 &&
		kp_now_ms() - state->active_created_ms >= config->segment_ms)
		return true;
	return false;
}

/*
 * Start a new active segment at the log end offset: create its relation
 * and add it to the directory (both WAL-logged at once, not transactional,
 * unless the partition itself is not yet committed).
 */
static void
roll_segment(KpPartitionState *state, bool drop_on_abort)
{
	int64		partition_id = state->key.partition_id;
	Oid			relnode;
	int64		first_open = state->log_end_offset;
	int			i;

	/* where recovery starts looking for transactions still open (recovery.c) */
	for (i = 0; i < state->ntxns; i++)
		first_open = Min(first_open, state->txns[i].first_offset);
	relnode = kp_segment_create(partition_id, state->log_end_offset, first_open,
								drop_on_abort);
	if (drop_on_abort)
		kp_partition_created_in_xact(state, relnode);
	kp_directory_add(partition_id, state->log_end_offset, relnode);
	if (!OidIsValid(state->active_relnode))
	{
		state->log_start_offset = state->log_end_offset;
		state->segment_count++;
	}
	else if (state->log_start_offset >= state->log_end_offset)
	{
		/*
		 * DeleteRecords up to the high watermark left the old segment wholly
		 * below the log start: with the new segment after it, it leaves the
		 * log (the directory's readers move it to the replaced list,
		 * directory.c) and is dropped later (logstart.c).
		 */
	}
	else
	{
		state->closed_bytes += state->active_size;
		state->segment_count++;
	}
	state->active_relnode = relnode;
	state->active_base_offset = state->log_end_offset;
	state->active_size = 0;
	state->active_created_ms = kp_now_ms();
}

/*
 * The append itself, with the appender lock held.  On any error the state
 * is marked for reloading, so a half-written batch is found and cut by the
 * same recovery that handles a crash.
 */
void
kp_append_locked(KpPartitionState *state, const KpLogConfig *config,
				 bool drop_on_abort, char *batch, size_t len,
				 int64 txn_producer_id, KpAppendResult *result)
{
	KpBatchHeader hdr;
	Relation	rel;

	if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK ||
		KpBatchTotalSize(&hdr) != len)
		elog(ERROR, "kafka_pg: invalid record batch passed to the log");

	/* before anything is written (kp_txnstate_add after it cannot fail) */
	if (txn_producer_id != KP_NO_PRODUCER_ID)
		kp_txnstate_check_room(state, txn_producer_id);

	result->status = KP_APPEND_OK;
	if (kp_producer_batch_is_idempotent(&hdr))
	{
		result->status = kp_producer_check_batch(state, &hdr, result);
		if (result->status != KP_APPEND_OK)
		{
			result->log_append_time = -1;
			result->end_lsn = InvalidXLogRecPtr;
			return;
		}
	}

	PG_TRY();
	{
		if (needs_roll(state, config, len))
			roll_segment(state, drop_on_abort);
		state->config = *config;

		result->base_offset = state->log_end_offset;
		result->last_offset = result->base_offset + hdr.last_offset_delta;
		result->log_append_time = -1;
		kp_batch_set_base_offset(batch, result->base_offset);
		/* the leader epoch: the timeline less one (docs/replication.md) */
		kp_batch_set_leader_epoch(batch, (int32) GetWALInsertionTimeLine() - 1);
		if (config->log_append_time && !KpBatchIsControl(&hdr))
		{
			/* message.timestamp.type=LogAppendTime: the broker stamps it */
			int16		attrs = hdr.attributes | KP_ATTR_TIMESTAMP_TYPE;

			result->log_append_time = kp_now_ms();
			kp_put_int16(batch + KP_BATCH_ATTR_OFFSET, attrs);
			kp_put_int64(batch + 35, result->log_append_time);	/* maxTimestamp */
			kp_batch_update_crc(batch, len);
			hdr.max_timestamp = result->log_append_time;
		}

		rel = kp_segment_open(state->active_relnode);
		/* markers carry no user time: keep them out of the time index */
		result->end_lsn = kp_segment_write(rel, state->active_size, batch, len,
										   result->base_offset,
										   KpBatchIsControl(&hdr) ? -1 : hdr.max_timestamp);
		kp_segment_close(rel);
	}
	PG_CATCH();
	{
		state->loaded = false;
		PG_RE_THROW();
	}
	PG_END_TRY();

	state->active_size += len;
	state->log_end_offset = result->last_offset + 1;
	kp_partition_note_append(state, state->log_end_offset, result->end_lsn);
	if (!KpBatchIsControl(&hdr) && hdr.max_timestamp > state->max_timestamp)
	{
		state->max_timestamp = hdr.max_timestamp;
		state->max_timestamp_offset = result->last_offset;
	}
	state->append_count++;
	if (kp_producer_batch_is_idempotent(&hdr))
		kp_producer_note_batch(state, &hdr, result->base_offset);
	if (txn_producer_id != KP_NO_PRODUCER_ID)
		kp_txnstate_add(state, txn_producer_id, hdr.producer_epoch, result->base_offset);
	kp_txnstate_compute_lso(state);
	pg_atomic_fetch_add_u64(&kp_store_shared->appends, 1);
}

void
kp_log_append(const KpPartitionRef *part, const KpLogConfig *config,
			  char *batch, size_t len, int64 txn_producer_id,
			  KpAppendResult *result)
{
	KpPartitionState *state;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot produce to a topic during recovery"),
				 errhint("Produce on the primary; a standby serves reads.")));

	/*
	 * A roll adds a directory entry, and finding the directory may read
	 * kafka.store under a heavyweight lock: do that now, not under the
	 * appender lock.
	 */
	(void) kp_directory_relnode();
	state = kp_partition_lock(part->partition_id, true);

	/*
	 * Markers of transactions decided since the last append go first, so a
	 * marker always precedes whatever was appended after its transaction
	 * ended, whether or not the resolver got there before us.
	 */
	if (state->has_decided)
	{
		state->config = *config;
		kp_txnstate_write_markers(state);
	}
	kp_append_locked(state, config, part->created_in_xact, batch, len,
					 txn_producer_id, result);
	kp_partition_unlock(state);
	if (result->status == KP_APPEND_OK)
		kp_notify_append_waiters();
}
