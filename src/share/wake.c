/*-------------------------------------------------------------------------
 *
 * wake.c
 *	  Waking parked ShareFetches when records become acquirable again.
 *
 * A ShareFetch with nothing to acquire parks (long poll) on the wait
 * buckets of its partitions (src/store/waiters.c), as a Fetch does: an
 * append wakes it.  Records also become acquirable without an append, and
 * Kafka completes a delayed share fetch for those too:
 *
 * - a release (an acknowledgement of type release, a member leaving or
 *   expiring, a share session closing): the releasing transaction wakes the
 *   partitions' buckets once it has committed (an XactCallback: a fetch
 *   woken before the commit would see the records still acquired, park
 *   again and miss the wake-up);
 * - a SQL transaction holding records (kafka.share_acquire) that rolls
 *   back: the backend wakes the partitions it acquired from once its abort
 *   is recorded (the next acquisition then sees the transaction aborted);
 * - an acquisition that took records committing (others found the
 *   share-partition busy; records may be left);
 * - an acquisition lock expiring: nobody acts at that moment, so the parked
 *   fetch sets itself a timer.  Every acquisition and lock renewal notes its
 *   lock deadline in a per-bucket hint in shared memory: "next", the
 *   earliest deadline still to come (a deadline already past is replaced by
 *   the next one noted), and "last", the latest deadline noted.  A parked
 *   ShareFetch runs again at the earliest "next" of its buckets; when a
 *   "next" has passed but a "last" is still to come (a deadline noted
 *   between the two may have been overwritten), it looks again every
 *   KP_SHARE_EXPIRY_POLL_MS until "last".  So a lock that expires reaches a
 *   parked consumer within that interval at worst, and at once (the
 *   acquisition's own step 1 makes it available) in the usual case.
 *
 * A wake-up is only a hint: the woken fetch re-runs its acquisition and parks
 * again when there is still nothing for it.  Buckets are shared by
 * partitions (and all share groups of a partition share its bucket), so a
 * wake-up may be for someone else; plain Fetches parked on the same bucket
 * wake too, find nothing new and park again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "port/atomics.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "share/share.h"
#include "store/store.h"

typedef struct ShareExpiryHint
{
	pg_atomic_uint64 next;		/* TimestampTz: earliest deadline to come */
	pg_atomic_uint64 last;		/* TimestampTz: latest deadline noted */
} ShareExpiryHint;

static ShareExpiryHint *hints = NULL;

Size
kp_share_wake_shmem_size(void)
{
	return mul_size(KP_FETCH_WAIT_BUCKETS, sizeof(ShareExpiryHint));
}

/* called with AddinShmemInitLock held */
void
kp_share_wake_shmem_init(void)
{
	bool		found;

	hints = ShmemInitStruct("kafka_pg share lock expiry hints", kp_share_wake_shmem_size(), &found);
	if (!found)
	{
		int			i;

		for (i = 0; i < KP_FETCH_WAIT_BUCKETS; i++)
		{
			pg_atomic_init_u64(&hints[i].next, 0);
			pg_atomic_init_u64(&hints[i].last, 0);
		}
	}
}

/* ---------------------------------------------------------------------
 * Lock deadlines
 * ---------------------------------------------------------------------
 */

void
kp_share_note_lock_deadline(int64 partition_id, TimestampTz deadline)
{
	ShareExpiryHint *h;
	TimestampTz now = GetCurrentTimestamp();
	uint64		cur;

	if (hints == NULL || partition_id < 0)
		return;
	h = &hints[kp_log_wait_bucket(partition_id)];
	cur = pg_atomic_read_u64(&h->next);
	while ((TimestampTz) cur <= now || deadline < (TimestampTz) cur)
	{
		if (pg_atomic_compare_exchange_u64(&h->next, &cur, (uint64) deadline))
			break;
	}
	cur = pg_atomic_read_u64(&h->last);
	while (deadline > (TimestampTz) cur)
	{
		if (pg_atomic_compare_exchange_u64(&h->last, &cur, (uint64) deadline))
			break;
	}
}

TimestampTz
kp_share_expiry_timer(int64 partition_id, TimestampTz now)
{
	ShareExpiryHint *h;
	TimestampTz next;
	TimestampTz last;

	if (hints == NULL || partition_id < 0)
		return 0;
	h = &hints[kp_log_wait_bucket(partition_id)];
	next = (TimestampTz) pg_atomic_read_u64(&h->next);
	last = (TimestampTz) pg_atomic_read_u64(&h->last);
	if (next > now)
		return next;
	if (last > now)
		return Min(last, now + (TimestampTz) KP_SHARE_EXPIRY_POLL_MS * 1000);
	return 0;
}

/* ---------------------------------------------------------------------
 * Wake-ups at the end of the transaction
 * ---------------------------------------------------------------------
 */

#define MAX_PENDING 64

static int64 wake_at_commit[MAX_PENDING];
static int	nwake_at_commit = 0;
static int64 wake_at_abort[MAX_PENDING];
static int	nwake_at_abort = 0;
static bool wake_overflow_commit = false;
static bool wake_overflow_abort = false;
static bool callback_registered = false;

static void
wake_all_buckets(void)
{
	/* more partitions than we keep: every bucket (rare, and only a hint) */
	int64		b;

	for (b = 0; b < KP_FETCH_WAIT_BUCKETS; b++)
		kp_log_wake_wait_bucket((int) b);
}

static void
share_wake_xact_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_overflow_commit)
				wake_all_buckets();
			else
				for (i = 0; i < nwake_at_commit; i++)
					kp_log_wake_partition(wake_at_commit[i]);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (wake_overflow_abort)
				wake_all_buckets();
			else
				for (i = 0; i < nwake_at_abort; i++)
					kp_log_wake_partition(wake_at_abort[i]);
			break;
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	nwake_at_commit = 0;
	nwake_at_abort = 0;
	wake_overflow_commit = false;
	wake_overflow_abort = false;
}

static void
remember(int64 *list, int *n, bool *overflow, int64 partition_id)
{
	int			i;

	if (partition_id < 0)
		return;
	if (!callback_registered)
	{
		RegisterXactCallback(share_wake_xact_callback, NULL);
		callback_registered = true;
	}
	for (i = 0; i < *n; i++)
		if (list[i] == partition_id)
			return;
	if (*n == MAX_PENDING)
		*overflow = true;
	else
		list[(*n)++] = partition_id;
}

void
kp_share_wake_at_commit(int64 partition_id)
{
	remember(wake_at_commit, &nwake_at_commit, &wake_overflow_commit, partition_id);
}

void
kp_share_wake_at_abort(int64 partition_id)
{
	remember(wake_at_abort, &nwake_at_abort, &wake_overflow_abort, partition_id);
}

int64
kp_share_partition_id(const char *topic, int32 partition)
{
	const KpTopic *t = kp_topic_open(topic, AccessShareLock, true);

	if (t == NULL || partition < 0 || partition >= t->partition_count)
		return -1;
	return t->partition_ids[partition];
}
