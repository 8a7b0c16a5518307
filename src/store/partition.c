/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  Hot per-partition state in shared memory, and the one append path.
 *
 * Each partition that has been touched since the server started has a
 * KpPartitionState in a shared hash table: its log end offset (= high
 * watermark, a single node), last stable offset, active segment, and the
 * transactions open in it.  The state is recovered lazily from the store
 * the first time a partition is touched: the tail of the last segment is
 * walked, a torn batch (crash between the WAL records of one multi-page
 * append) is cut off, and transactions left without a marker are decided
 * from the commit log.
 *
 * kp_log_append is the only code that writes a partition.  It holds the
 * partition's appender lock (an LWLock in the state) while it assigns the
 * offsets and writes the pages, so offsets strictly increase and leave no
 * holes however many backends and listener workers append at once.
 *
 * On a hot standby nothing here is used for reading: the state would not
 * follow WAL replay, so readers there work from the pages (reader.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/smgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "store/store_int.h"

/* GUC: kafka.max_partitions, defined in src/main */
extern int	kp_max_partitions;

KpStoreShared *kp_store_shared = NULL;
static HTAB *partition_hash = NULL;

/* partitions dropped by the current transaction, forgotten at commit */
static List *dropped_partitions = NIL;
/* partitions whose storage this transaction created, gone if it aborts */
static List *created_partitions = NIL;

static int	write_markers_locked(KpPartitionState *state);
static void remember_partition(List **list, int64 partition_id);
static void notify_append_waiters(void);
static bool xact_callback_registered = false;

int64
kp_now_ms(void)
{
	TimestampTz now = GetCurrentTimestamp();

	return now / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

Size
kp_store_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(KpStoreShared)),
					hash_estimate_size(kp_max_partitions, sizeof(KpPartitionState)));
}

void
kp_store_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg store", 2);
}

void
kp_store_shmem_init(void)
{
	bool		found;
	HASHCTL		info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	kp_store_shared = ShmemInitStruct("kafka_pg store", sizeof(KpStoreShared), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche("kafka_pg store");

		kp_store_shared->partition_tranche = LWLockNewTrancheId();
		kp_store_shared->map_lock = &locks[0].lock;
		kp_store_shared->directory_lock = &locks[1].lock;
		kp_store_shared->resolver_latch = NULL;
		pg_atomic_init_u64(&kp_store_shared->appends, 0);
		pg_atomic_init_u32(&kp_store_shared->nwaiting, 0);
		pg_atomic_init_u32(&kp_store_shared->resolver_idle, 1);
		SpinLockInit(&kp_store_shared->waiter_mutex);
		for (int i = 0; i < KP_MAX_APPEND_WAITERS; i++)
		{
			kp_store_shared->waiters[i].latch = NULL;
			pg_atomic_init_u32(&kp_store_shared->waiters[i].waiting, 0);
		}
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(KpPartitionKey);
	info.entrysize = sizeof(KpPartitionState);
	partition_hash = ShmemInitHash("kafka_pg partitions", kp_max_partitions,
								   kp_max_partitions, &info,
								   HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
	LWLockRegisterTranche(kp_store_shared->partition_tranche, "kafka_pg partition");
}

/* ---------------------------------------------------------------------
 * Recovering a partition's state from the store
 * ---------------------------------------------------------------------
 */

/*
 * Walk the batches of a segment from stream position pos (whose batch must
 * start at expected_offset) to the end of its data.  Returns the position
 * just after the last whole, CRC-valid batch and sets *next_offset to the
 * offset after it.  Nothing is changed.
 */
static int64
walk_tail(Relation rel, int64 pos, int64 data_size, int64 expected_offset,
		  int64 *next_offset)
{
	char		hdrbuf[KP_BATCH_HEADER_SIZE];
	char	   *buf = NULL;
	size_t		bufcap = 0;

	while (pos < data_size)
	{
		KpBatchHeader hdr;
		size_t		total;

		if (data_size - pos < KP_BATCH_HEADER_SIZE ||
			!kp_segment_read(rel, pos, hdrbuf, KP_BATCH_HEADER_SIZE) ||
			kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) != KP_CODEC_OK ||
			hdr.base_offset != expected_offset)
			break;
		total = KpBatchTotalSize(&hdr);
		if ((int64) total > data_size - pos)
			break;
		if (total > bufcap)
		{
			bufcap = Max(total, 65536);
			buf = buf ? repalloc(buf, bufcap) : palloc(bufcap);
		}
		if (!kp_segment_read(rel, pos, buf, total) ||
			kp_batch_validate(buf, total, &hdr) != KP_CODEC_OK)
			break;
		pos += total;
		expected_offset = KpBatchLastOffset(&hdr) + 1;
	}
	if (buf)
		pfree(buf);
	*next_offset = expected_offset;
	return pos;
}

static void
add_txn(KpPartitionState *state, int64 producer_id, int16 epoch, int64 first_offset)
{
	int			i;

	for (i = 0; i < state->ntxns; i++)
		if (state->txns[i].producer_id == producer_id)
			return;
	if (state->ntxns >= KP_MAX_OPEN_TXNS)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many transactions open on one partition"),
				 errdetail("At most %d transactions can write to a partition at once.",
						   KP_MAX_OPEN_TXNS)));
	state->txns[state->ntxns].producer_id = producer_id;
	state->txns[state->ntxns].producer_epoch = epoch;
	state->txns[state->ntxns].first_offset = first_offset;
	state->txns[state->ntxns].outcome = KP_TXN_OPEN;
	state->ntxns++;
}

static void
remove_txn(KpPartitionState *state, int i)
{
	state->txns[i] = state->txns[state->ntxns - 1];
	state->ntxns--;
}

/* LSO: first offset of the earliest transaction without a marker (KIP-98). */
static void
compute_lso(KpPartitionState *state)
{
	int64		lso = state->log_end_offset;
	int			i;

	for (i = 0; i < state->ntxns; i++)
		lso = Min(lso, state->txns[i].first_offset);
	state->last_stable_offset = lso;
}

/*
 * Outcome of a SQL transaction's batches from the commit log.  A transaction
 * that is neither running nor committed aborted, crashed ones included.
 */
KpTxnOutcome
kp_sql_xact_outcome(int64 producer_id)
{
	FullTransactionId fxid = KpPidGetFullXid(producer_id);
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);

	/*
	 * Older than the commit log keeps (or than 32-bit xids can tell apart):
	 * its marker was written long ago, readers have it; see
	 * docs/transactions.md.
	 */
	if (U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) > (UINT64CONST(1) << 31) ||
		TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		return KP_TXN_COMMITTED;
	if (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid))
		return KP_TXN_OPEN;
	return TransactionIdDidCommit(xid) ? KP_TXN_COMMITTED : KP_TXN_ABORTED;
}

/* ---------------------------------------------------------------------
 * Idempotent producers
 * ---------------------------------------------------------------------
 */

static bool
is_idempotent_batch(const KpBatchHeader *hdr)
{
	return hdr->producer_id >= 0 && hdr->base_sequence >= 0 &&
		!KpPidIsSqlXact(hdr->producer_id) && !KpBatchIsControl(hdr);
}

static KpProducerState *
find_producer(KpPartitionState *state, int64 producer_id, bool create)
{
	KpProducerState *victim = NULL;
	int			i;

	for (i = 0; i < KP_MAX_PRODUCERS; i++)
	{
		KpProducerState *p = &state->producers[i];

		if (p->producer_id == producer_id && p->nbatches >= 0)
			return p;
		if (victim == NULL || p->producer_id < 0 ||
			(victim->producer_id >= 0 && p->last_used < victim->last_used))
			victim = p;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof(KpProducerState));
	victim->producer_id = producer_id;
	victim->epoch = -1;
	return victim;
}

/* Record a batch of an idempotent producer (append or recovery). */
static void
note_producer_batch(KpPartitionState *state, const KpBatchHeader *hdr,
					int64 base_offset)
{
	KpProducerState *p = find_producer(state, hdr->producer_id, true);
	KpProducerBatch *b;

	if (hdr->producer_epoch != p->epoch)
	{
		p->epoch = hdr->producer_epoch;
		p->nbatches = 0;
	}
	if (p->nbatches == KP_PRODUCER_BATCHES)
	{
		memmove(&p->batches[0], &p->batches[1],
				sizeof(KpProducerBatch) * (KP_PRODUCER_BATCHES - 1));
		p->nbatches--;
	}
	b = &p->batches[p->nbatches++];
	b->first_seq = hdr->base_sequence;
	b->last_seq = (int32) (((int64) hdr->base_sequence + hdr->last_offset_delta) & 0x7fffffff);
	b->base_offset = base_offset;
	b->last_offset = base_offset + hdr->last_offset_delta;
	p->last_used = state->append_count;
}

/*
 * Check a batch against its producer's state (Kafka's ProducerAppendInfo):
 * duplicates of the last five batches, sequence gaps, fenced epochs.
 */
static KpAppendStatus
check_producer_batch(KpPartitionState *state, const KpBatchHeader *hdr,
					 KpAppendResult *result)
{
	KpProducerState *p = find_producer(state, hdr->producer_id, false);
	int			i;
	int32		expected;

	if (p == NULL || p->nbatches == 0)
		return KP_APPEND_OK;	/* unknown producer: accept (state may have been evicted) */
	if (hdr->producer_epoch < p->epoch)
		return KP_APPEND_STALE_EPOCH;
	if (hdr->producer_epoch > p->epoch)
		return hdr->base_sequence == 0 ? KP_APPEND_OK : KP_APPEND_OUT_OF_ORDER;
	for (i = 0; i < p->nbatches; i++)
	{
		if (p->batches[i].first_seq == hdr->base_sequence &&
			p->batches[i].last_offset - p->batches[i].base_offset == hdr->last_offset_delta)
		{
			result->base_offset = p->batches[i].base_offset;
			result->last_offset = p->batches[i].last_offset;
			return KP_APPEND_DUPLICATE;
		}
	}
	expected = (p->batches[p->nbatches - 1].last_seq == PG_INT32_MAX) ? 0 :
		p->batches[p->nbatches - 1].last_seq + 1;
	if (hdr->base_sequence != expected)
		return KP_APPEND_OUT_OF_ORDER;
	return KP_APPEND_OK;
}

/*
 * Rebuild the transactions open in the active segment: transactional
 * batches whose producer has no marker after them.  SQL transactions among
 * them are decided from the commit log now; the resolver writes markers.
 */
static void
recover_open_txns(KpPartitionState *state, Relation rel, int64 data_size)
{
	char		hdrbuf[KP_BATCH_HEADER_SIZE];
	int64		pos = 0;
	int			i;

	state->ntxns = 0;
	while (pos < data_size)
	{
		KpBatchHeader hdr;

		if (!kp_segment_read(rel, pos, hdrbuf, KP_BATCH_HEADER_SIZE) ||
			kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) != KP_CODEC_OK)
			break;
		if (is_idempotent_batch(&hdr))
			note_producer_batch(state, &hdr, hdr.base_offset);
		if (KpBatchIsTransactional(&hdr))
		{
			if (KpBatchIsControl(&hdr))
			{
				for (i = 0; i < state->ntxns; i++)
					if (state->txns[i].producer_id == hdr.producer_id)
					{
						remove_txn(state, i);
						break;
					}
			}
			else if (state->ntxns < KP_MAX_OPEN_TXNS)
				add_txn(state, hdr.producer_id, hdr.producer_epoch, hdr.base_offset);
		}
		pos += KpBatchTotalSize(&hdr);
	}

	for (i = 0; i < state->ntxns; i++)
	{
		if (KpPidIsSqlXact(state->txns[i].producer_id))
		{
			state->txns[i].outcome = kp_sql_xact_outcome(state->txns[i].producer_id);
			if (state->txns[i].outcome != KP_TXN_OPEN)
				state->has_decided = true;
		}
	}
}

static void
partition_load(KpPartitionState *state)
{
	int64		partition_id = state->key.partition_id;
	int64		deleted_before = kp_directory_log_start(partition_id);	/* retention.c */
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
	int			i;

	state->ntxns = 0;
	state->has_decided = false;
	state->closed_bytes = 0;
	state->append_count = 0;
	for (i = 0; i < KP_MAX_PRODUCERS; i++)
		state->producers[i].producer_id = -1;
	state->segment_count = nsegs;
	state->max_timestamp = -1;
	state->max_timestamp_offset = -1;
	memset(&state->config, 0, sizeof(KpLogConfig));

	if (nsegs == 0)
	{
		state->log_start_offset = 0;
		state->log_end_offset = 0;
		state->active_relnode = InvalidOid;
		state->active_base_offset = 0;
		state->active_size = 0;
		state->active_created_ms = 0;
	}
	else
	{
		KpSegInfo	last = segs[nsegs - 1];
		Relation	rel;
		KpSegmentMeta meta;
		int64		size;
		int64		start;
		int64		cover_offset;
		int64		end;
		int64		leo;

		/* DeleteRecords may have moved it into the first segment */
		state->log_start_offset = Max(segs[0].base_offset, deleted_before);
		for (i = 0; i < nsegs - 1; i++)
		{
			Relation	r = kp_segment_open(segs[i].relnode);

			state->closed_bytes += kp_segment_data_size(r);
			kp_segment_close(r);
		}

		rel = kp_segment_open(last.relnode);
		kp_segment_read_meta(rel, &meta);
		size = kp_segment_data_size(rel);

		/* the last page's cover batch, and the offset it must start with */
		start = kp_segment_seek_offset(rel, PG_INT64_MAX);
		cover_offset = meta.base_offset;
		if (size > 0)
		{
			char		hdrbuf[KP_BATCH_HEADER_SIZE];
			KpBatchHeader hdr;

			if (kp_segment_read(rel, start, hdrbuf, KP_BATCH_HEADER_SIZE) &&
				kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) == KP_CODEC_OK)
				cover_offset = hdr.base_offset;
			else
			{
				/* a torn header: trust the page index for its offset */
				start = 0;
			}
		}
		end = walk_tail(rel, start, size, start == 0 ? meta.base_offset : cover_offset, &leo);
		if (end < size)
		{
			if (!RecoveryInProgress())
			{
				kp_segment_truncate(rel, end);
				ereport(LOG,
						(errmsg("kafka_pg: cut the torn tail of partition %lld at offset %lld",
								(long long) partition_id, (long long) leo),
						 errdetail("Segment %u held %lld bytes after its last whole batch; they were never acknowledged.",
								   last.relnode, (long long) (size - end))));
			}
			size = end;
		}
		else if (!RecoveryInProgress() && kp_segment_has_excess_blocks(rel, end))
		{
			/* zero pages from an extension whose write a crash lost */
			kp_segment_truncate(rel, end);
			ereport(DEBUG1,
					(errmsg_internal("kafka_pg: removed empty pages after the last batch of partition %lld",
							(long long) partition_id)));
		}

		state->log_end_offset = leo;
		state->active_relnode = last.relnode;
		state->active_base_offset = meta.base_offset;
		state->active_size = size;
		state->active_created_ms = meta.created_ms;
		state->max_timestamp = kp_segment_max_timestamp(rel);
		recover_open_txns(state, rel, size);
		kp_segment_close(rel);
	}
	compute_lso(state);
	state->loaded = true;
	if (state->has_decided)
		kp_resolver_wakeup();
}

/* ---------------------------------------------------------------------
 * Finding and locking partition state
 * ---------------------------------------------------------------------
 */

KpPartitionState *
kp_partition_find(Oid dboid, int64 partition_id)
{
	KpPartitionKey key;
	KpPartitionState *state;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.partition_id = partition_id;
	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	state = hash_search(partition_hash, &key, HASH_FIND, NULL);
	LWLockRelease(kp_store_shared->map_lock);
	return state;
}

/*
 * Return the partition's state with its appender lock held exclusively,
 * recovering it from the store first if needed.  With create = false,
 * returns NULL for a partition that has no state yet.  Not on a standby.
 */
KpPartitionState *
kp_partition_lock(int64 partition_id, bool create)
{
	KpPartitionState *state = kp_partition_find(MyDatabaseId, partition_id);

	if (state == NULL)
	{
		KpPartitionKey key;
		bool		found;

		if (!create)
			return NULL;
		memset(&key, 0, sizeof(key));
		key.dboid = MyDatabaseId;
		key.partition_id = partition_id;
		LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
		state = hash_search(partition_hash, &key, HASH_ENTER_NULL, &found);
		if (state == NULL)
		{
			LWLockRelease(kp_store_shared->map_lock);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("too many partitions in use"),
					 errhint("Raise kafka.max_partitions (now %d) and restart the server.",
							 kp_max_partitions)));
		}
		if (!found)
		{
			LWLockInitialize(&state->lock, kp_store_shared->partition_tranche);
			ConditionVariableInit(&state->cv);
			state->loaded = false;
		}
		LWLockRelease(kp_store_shared->map_lock);
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (!state->loaded)
	{
		PG_TRY();
		{
			partition_load(state);
		}
		PG_CATCH();
		{
			state->loaded = false;
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	return state;
}

void
kp_partition_unlock(KpPartitionState *state)
{
	LWLockRelease(&state->lock);
}

/* ---------------------------------------------------------------------
 * Appending
 * ---------------------------------------------------------------------
 */

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

static void
roll_segment(KpPartitionState *state, bool drop_on_abort)
{
	int64		partition_id = state->key.partition_id;
	Oid			relnode;

	relnode = kp_segment_create(partition_id, state->log_end_offset, drop_on_abort);
	if (drop_on_abort)
		remember_partition(&created_partitions, partition_id);
	kp_directory_add(partition_id, state->log_end_offset, relnode);
	if (OidIsValid(state->active_relnode))
		state->closed_bytes += state->active_size;
	else
		state->log_start_offset = state->log_end_offset;
	state->active_relnode = relnode;
	state->active_base_offset = state->log_end_offset;
	state->active_size = 0;
	state->active_created_ms = kp_now_ms();
	state->segment_count++;
}

/*
 * The append itself, with the appender lock held.  On any error the state
 * is marked for reloading, so a half-written batch is found and cut by the
 * same recovery that handles a crash.
 */
static void
append_locked(KpPartitionState *state, const KpLogConfig *config,
			  bool drop_on_abort, char *batch, size_t len,
			  int64 txn_producer_id, KpAppendResult *result)
{
	KpBatchHeader hdr;
	Relation	rel;

	if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK ||
		KpBatchTotalSize(&hdr) != len)
		elog(ERROR, "kafka_pg: invalid record batch passed to the log");

	result->status = KP_APPEND_OK;
	if (is_idempotent_batch(&hdr))
	{
		result->status = check_producer_batch(state, &hdr, result);
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
	if (!KpBatchIsControl(&hdr) && hdr.max_timestamp > state->max_timestamp)
	{
		state->max_timestamp = hdr.max_timestamp;
		state->max_timestamp_offset = result->last_offset;
	}
	state->append_count++;
	if (is_idempotent_batch(&hdr))
		note_producer_batch(state, &hdr, result->base_offset);
	if (txn_producer_id != KP_NO_PRODUCER_ID)
		add_txn(state, txn_producer_id, hdr.producer_epoch, result->base_offset);
	compute_lso(state);
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
	state = kp_partition_lock(part->partition_id, true);

	/*
	 * Markers of transactions decided since the last append go first, so a
	 * marker always precedes whatever was appended after its transaction
	 * ended, whether or not the resolver got there before us.
	 */
	if (state->has_decided)
	{
		state->config = *config;
		write_markers_locked(state);
	}
	append_locked(state, config, part->created_in_xact, batch, len,
				  txn_producer_id, result);
	kp_partition_unlock(state);
	ConditionVariableBroadcast(&state->cv);
	if (result->status == KP_APPEND_OK)
		notify_append_waiters();
}

/* ---------------------------------------------------------------------
 * Waiters for appends
 * ---------------------------------------------------------------------
 */

static void
release_waiter_slot(int code, Datum arg)
{
	int			slot = DatumGetInt32(arg);

	kp_log_set_append_waiter(slot, false);
	SpinLockAcquire(&kp_store_shared->waiter_mutex);
	kp_store_shared->waiters[slot].latch = NULL;
	SpinLockRelease(&kp_store_shared->waiter_mutex);
}

int
kp_log_register_append_waiter(Latch *latch)
{
	int			slot = -1;
	int			i;

	SpinLockAcquire(&kp_store_shared->waiter_mutex);
	for (i = 0; i < KP_MAX_APPEND_WAITERS; i++)
	{
		if (kp_store_shared->waiters[i].latch == NULL)
		{
			kp_store_shared->waiters[i].latch = latch;
			slot = i;
			break;
		}
	}
	SpinLockRelease(&kp_store_shared->waiter_mutex);
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many kafka_pg processes wait for appends (at most %d)",
						KP_MAX_APPEND_WAITERS)));
	on_shmem_exit(release_waiter_slot, Int32GetDatum(slot));
	return slot;
}

void
kp_log_set_append_waiter(int slot, bool waiting)
{
	KpAppendWaiter *w;
	uint32		was;

	if (slot < 0)
		return;
	w = &kp_store_shared->waiters[slot];
	was = pg_atomic_exchange_u32(&w->waiting, waiting ? 1 : 0);
	if (was && !waiting)
		pg_atomic_fetch_sub_u32(&kp_store_shared->nwaiting, 1);
	else if (!was && waiting)
		pg_atomic_fetch_add_u32(&kp_store_shared->nwaiting, 1);
}

void
kp_log_wake_waiters(void)
{
	notify_append_waiters();
}

/* Wake the processes waiting for appends; free when nobody waits. */
static void
notify_append_waiters(void)
{
	int			i;

	if (pg_atomic_read_u32(&kp_store_shared->nwaiting) == 0)
		return;
	for (i = 0; i < KP_MAX_APPEND_WAITERS; i++)
	{
		KpAppendWaiter *w = &kp_store_shared->waiters[i];
		Latch	   *latch = w->latch;

		if (latch && pg_atomic_read_u32(&w->waiting))
			SetLatch(latch);
	}
}

static void
resolver_detach(int code, Datum arg)
{
	kp_store_shared->resolver_latch = NULL;
}

void
kp_store_set_resolver_latch(Latch *latch)
{
	kp_store_shared->resolver_latch = latch;
	on_shmem_exit(resolver_detach, (Datum) 0);
}

/*
 * Wake the resolver if it is idle.  While it is busy it polls every few
 * milliseconds anyway, so a stream of commits costs no signal each.
 */
void
kp_resolver_wakeup(void)
{
	Latch	   *latch = kp_store_shared ? kp_store_shared->resolver_latch : NULL;

	if (latch && pg_atomic_read_u32(&kp_store_shared->resolver_idle))
		SetLatch(latch);
}

void
kp_resolver_set_idle(bool idle)
{
	pg_atomic_write_u32(&kp_store_shared->resolver_idle, idle ? 1 : 0);
	pg_memory_barrier();
}

/* ---------------------------------------------------------------------
 * Transaction outcomes and markers
 * ---------------------------------------------------------------------
 */

void
kp_log_decide_txn(Oid dboid, int64 partition_id, int64 producer_id,
				  KpTxnOutcome outcome)
{
	KpPartitionState *state = kp_partition_find(dboid, partition_id);
	int			i;

	if (state == NULL)
		return;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (i = 0; i < state->ntxns; i++)
	{
		if (state->txns[i].producer_id == producer_id &&
			state->txns[i].outcome == KP_TXN_OPEN)
		{
			state->txns[i].outcome = outcome;
			state->has_decided = true;
		}
	}
	LWLockRelease(&state->lock);
}

/*
 * Append the markers of the partition's decided transactions, with its
 * appender lock held.  Returns how many were written.  A partition whose
 * storage is gone (its topic was deleted, or it was created by a
 * transaction that aborted) just forgets its transactions.
 */
static int
write_markers_locked(KpPartitionState *state)
{
	int			written = 0;
	int			i = 0;
	bool		exists = OidIsValid(state->active_relnode);

	/*
	 * A dropped segment's file is emptied when the dropping (or, for a
	 * partition created by an aborted transaction, the creating)
	 * transaction ends: no blocks means no partition to write to.
	 */
	if (exists)
	{
		Relation	rel = kp_segment_open(state->active_relnode);

		exists = smgrexists(RelationGetSmgr(rel), MAIN_FORKNUM) &&
			smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM) > 0;
		kp_segment_close(rel);
	}

	while (i < state->ntxns)
	{
		KpOpenTxn  *txn = &state->txns[i];
		char	   *batch;
		size_t		len;
		KpAppendResult res;

		if (txn->outcome == KP_TXN_OPEN)
		{
			i++;
			continue;
		}
		if (exists)
		{
			batch = kp_build_control_batch(txn->producer_id, txn->producer_epoch,
										   txn->outcome == KP_TXN_COMMITTED ?
										   KP_CONTROL_COMMIT : KP_CONTROL_ABORT,
										   kp_now_ms(), 0, &len);
			append_locked(state, &state->config, false, batch, len,
						  KP_NO_PRODUCER_ID, &res);
			pfree(batch);
			written++;
		}
		remove_txn(state, i);
	}
	state->has_decided = false;
	compute_lso(state);
	return written;
}

/*
 * Decide, from the commit log, open SQL transactions of this database that
 * are no longer running: prepared transactions finished elsewhere, and any
 * whose backend could not run its callbacks.  The resolver calls it now and
 * then; it costs a scan of the partition table.
 */
void
kp_log_sweep_sql_txns(void)
{
	HASH_SEQ_STATUS seq;
	KpPartitionState *entry;

	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	hash_seq_init(&seq, partition_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		int			i;

		if (entry->key.dboid != MyDatabaseId || entry->ntxns == 0)
			continue;
		LWLockAcquire(&entry->lock, LW_EXCLUSIVE);
		for (i = 0; i < entry->ntxns; i++)
		{
			KpOpenTxn  *txn = &entry->txns[i];

			if (txn->outcome == KP_TXN_OPEN && KpPidIsSqlXact(txn->producer_id))
			{
				txn->outcome = kp_sql_xact_outcome(txn->producer_id);
				if (txn->outcome != KP_TXN_OPEN)
					entry->has_decided = true;
			}
		}
		LWLockRelease(&entry->lock);
	}
	LWLockRelease(kp_store_shared->map_lock);
}

/*
 * Write the COMMIT/ABORT marker of every decided transaction in this
 * database's partitions (the resolver's job; any backend may do it).
 */
int
kp_log_write_pending_markers(void)
{
	HASH_SEQ_STATUS seq;
	KpPartitionState *entry;
	List	   *todo = NIL;
	ListCell   *lc;
	int			written = 0;

	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	hash_seq_init(&seq, partition_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry->key.dboid == MyDatabaseId && entry->has_decided && entry->loaded)
		{
			int64	   *id = palloc(sizeof(int64));

			*id = entry->key.partition_id;
			todo = lappend(todo, id);
		}
	}
	LWLockRelease(kp_store_shared->map_lock);

	foreach(lc, todo)
	{
		int64		partition_id = *(int64 *) lfirst(lc);
		KpPartitionState *state = kp_partition_lock(partition_id, false);

		if (state == NULL)
			continue;
		written += write_markers_locked(state);
		kp_partition_unlock(state);
		ConditionVariableBroadcast(&state->cv);
	}
	if (written > 0)
		notify_append_waiters();
	list_free_deep(todo);
	return written;
}

/* ---------------------------------------------------------------------
 * Offsets and dropping
 * ---------------------------------------------------------------------
 */

static void
forget_partitions(List *ids)
{
	ListCell   *lc;
	KpPartitionState *state;

	foreach(lc, ids)
	{
		KpPartitionKey key;

		memset(&key, 0, sizeof(key));
		key.dboid = MyDatabaseId;
		key.partition_id = *(int64 *) lfirst(lc);
		LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
		state = hash_search(partition_hash, &key, HASH_FIND, NULL);
		if (state != NULL)
		{
			/*
			 * Empty it under its own lock first: the resolver may have
			 * found it just before and be waiting for that lock.
			 */
			LWLockAcquire(&state->lock, LW_EXCLUSIVE);
			state->ntxns = 0;
			state->has_decided = false;
			state->active_relnode = InvalidOid;
			LWLockRelease(&state->lock);
			hash_search(partition_hash, &key, HASH_REMOVE, NULL);
		}
		LWLockRelease(kp_store_shared->map_lock);
	}
}

static void
store_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT)
		forget_partitions(dropped_partitions);
	if (event == XACT_EVENT_ABORT)
		forget_partitions(created_partitions);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		list_free_deep(dropped_partitions);
		dropped_partitions = NIL;
		list_free_deep(created_partitions);
		created_partitions = NIL;
	}
}

static void
remember_partition(List **list, int64 partition_id)
{
	MemoryContext old;
	int64	   *id;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(store_xact_callback, NULL);
		xact_callback_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	id = palloc(sizeof(int64));
	*id = partition_id;
	*list = lappend(*list, id);
	MemoryContextSwitchTo(old);
}

void
kp_log_drop_partition(int64 partition_id)
{
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
	int			i;

	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		RelationDropStorage(rel);
		kp_segment_close(rel);
	}

	remember_partition(&dropped_partitions, partition_id);
}
