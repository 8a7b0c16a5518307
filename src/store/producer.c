/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  Idempotent producers: sequence checks and duplicate detection per
 *	  partition (KIP-98, Kafka's ProducerStateManager/ProducerAppendInfo).
 *
 * For each partition the state keeps the last KP_PRODUCER_BATCHES batches
 * of up to KP_MAX_PRODUCERS producers (the least recently used is evicted):
 * their first and last sequence numbers and offsets, under the producer's
 * latest epoch.  The appender (append.c) checks every batch of an
 * idempotent producer against it before assigning offsets: a retry of a
 * kept batch is answered with its original offsets and not appended again;
 * a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is
 * INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0.
 *
 * A transaction marker whose epoch is above its transaction's (the
 * coordinator bumped it at the end: transactions version 2, or a fence)
 * moves the producer to that epoch with no batch yet, as Kafka's
 * ProducerStateManager does: a later batch of an older epoch is
 * INVALID_PRODUCER_EPOCH here too, and the next one must start at sequence
 * 0 (the client resets its sequences with the epoch).
 *
 * The state is not logged: recovery (recovery.c) rebuilds it from the batch
 * headers of the active segment, markers included.  A producer unknown to
 * the partition (new, evicted, or last seen in an older segment) is
 * accepted at any sequence, as Kafka accepts one whose state has expired.
 *
 * Batches of SQL transactions (KP_SQL_PID_FLAG) and control batches are not
 * idempotent-producer batches.  Everything here runs with the partition's
 * appender lock held and does no I/O.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "store/store_int.h"

/* Is the batch one an idempotent producer wrote (checked and recorded)? */
bool
kp_producer_batch_is_idempotent(const KpBatchHeader *hdr)
{
	return hdr->producer_id >= 0 && hdr->base_sequence >= 0 &&
		!KpPidIsSqlXact(hdr->producer_id) && !KpBatchIsControl(hdr);
}

/* Forget every producer of the partition (before recovery). */
void
kp_producer_reset(KpPartitionState *state)
{
	int			i;

	for (i = 0; i < KP_MAX_PRODUCERS; i++)
		state->producers[i].producer_id = -1;
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
	victim->marker_offset = -1;
	return victim;
}

/*
 * A marker at marker_offset closed producer_id's transaction with an epoch
 * above the transaction's own (the caller checks that): the producer is at
 * that epoch now, with no batch of it (append or recovery).
 */
void
kp_producer_note_bump(KpPartitionState *state, int64 producer_id, int16 epoch,
					  int64 marker_offset)
{
	KpProducerState *p = find_producer(state, producer_id, true);

	if (epoch <= p->epoch)
		return;
	p->epoch = epoch;
	p->nbatches = 0;
	p->marker_offset = marker_offset;
	p->last_used = state->append_count;
}

/* Record a batch of an idempotent producer (append or recovery). */
void
kp_producer_note_batch(KpPartitionState *state, const KpBatchHeader *hdr,
					   int64 base_offset)
{
	KpProducerState *p = find_producer(state, hdr->producer_id, true);
	KpProducerBatch *b;

	if (hdr->producer_epoch != p->epoch)
	{
		p->epoch = hdr->producer_epoch;
		p->nbatches = 0;
	}
	p->marker_offset = -1;
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
 * duplicates of the last five batches, sequence gaps, fenced epochs.  For
 * a duplicate, result gets the original batch's offsets.
 */
KpAppendStatus
kp_producer_check_batch(KpPartitionState *state, const KpBatchHeader *hdr,
						KpAppendResult *result)
{
	KpProducerState *p = find_producer(state, hdr->producer_id, false);
	int			i;
	int32		expected;

	if (p == NULL)
		return KP_APPEND_OK;	/* unknown producer: accept (state may have
								 * been evicted) */
	if (hdr->producer_epoch < p->epoch)
		return KP_APPEND_STALE_EPOCH;
	/* a new epoch, or the one a marker bumped to: from sequence 0 */
	if (hdr->producer_epoch > p->epoch || p->nbatches == 0)
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
