/*-------------------------------------------------------------------------
 *
 * producer_info.c
 *	  What a partition knows of its producers, for DescribeProducers.
 *
 * A copy, taken under the partition's appender lock, of the idempotent
 * producers the partition tracks (their last batch) and of the
 * transactions open in it (KIP-664: DescribeProducers, which
 * kafka-transactions.sh describe-producers and find-hanging use).  SQL
 * transactions appear as producers too (producer id KP_SQL_PID_FLAG |
 * xid, no sequence), so a session holding back the last stable offset can
 * be found the same way.  Read-only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "store/store_int.h"

int
kp_log_producers(int64 partition_id, KpProducerInfo **out)
{
	KpPartitionState *state;
	KpProducerInfo *info;
	int			n = 0;
	int			i;

	*out = NULL;
	if (RecoveryInProgress())
		return 0;
	info = palloc0(sizeof(KpProducerInfo) * (KP_MAX_PRODUCERS + KP_MAX_OPEN_TXNS));
	state = kp_partition_lock(partition_id, true);
	for (i = 0; i < KP_MAX_PRODUCERS; i++)
	{
		KpProducerState *p = &state->producers[i];
		KpProducerBatch *last;

		if (p->producer_id < 0 || p->nbatches < 0)
			continue;
		info[n].producer_id = p->producer_id;
		info[n].producer_epoch = p->epoch;
		if (p->nbatches == 0)
		{
			/* its epoch bumped by a marker: no sequence, the marker's time */
			info[n].last_sequence = -1;
			info[n].last_offset = p->marker_offset;
		}
		else
		{
			last = &p->batches[p->nbatches - 1];
			info[n].last_sequence = last->last_seq;
			info[n].last_offset = last->last_offset;
		}
		info[n].txn_start_offset = -1;
		n++;
	}
	for (i = 0; i < state->ntxns; i++)
	{
		KpOpenTxn  *txn = &state->txns[i];
		int			k;

		for (k = 0; k < n; k++)
			if (info[k].producer_id == txn->producer_id)
				break;
		if (k == n)
		{
			info[n].producer_id = txn->producer_id;
			info[n].producer_epoch = txn->producer_epoch;
			info[n].last_sequence = -1;
			info[n].last_offset = -1;
			n++;
		}
		info[k].txn_start_offset = txn->first_offset;
	}
	kp_partition_unlock(state);
	*out = info;
	return n;
}
