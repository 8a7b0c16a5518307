/*-------------------------------------------------------------------------
 *
 * coordinator.c
 *	  What every part of the group coordinator shares: its settings, the
 *	  group lock, member lookup, and the wakeup of parked requests.
 *
 * The coordinator's state is rows of kafka.consumer_groups and
 * kafka.group_members, read and written through src/catalog/groups.c.
 * Every operation that changes a group first takes the group's row lock
 * (kp_cat_group_read with for_update), so whichever listener worker or SQL
 * session runs it, a group changes one step at a time; see README.  A change
 * that others may be waiting for (kp_group_save, kp_group_wakeup) sets the
 * latches of the waiting processes once the changing transaction commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "group/group_int.h"
#include "protocol/errors.h"
#include "store/store.h"

int			kp_group_initial_rebalance_delay_ms = 3000;
int			kp_group_min_session_timeout_ms = 6000;
int			kp_group_max_session_timeout_ms = 1800000;
int			kp_offsets_retention_minutes = 10080;
int			kp_offsets_retention_check_interval_ms = 600000;

/* this transaction changed a group: wake the waiters when it commits */
static bool wake_at_commit = false;

static void
group_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_at_commit)
		kp_log_wake_waiters();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_at_commit = false;
}

void
kp_group_init_gucs(void)
{
	DefineCustomIntVariable("kafka.group_initial_rebalance_delay_ms",
							"How long a new group waits for more members before its first rebalance completes (Kafka's group.initial.rebalance.delay.ms).",
							NULL, &kp_group_initial_rebalance_delay_ms, 3000, 0, 300000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_min_session_timeout_ms",
							"Smallest session timeout a member may ask for (Kafka's group.min.session.timeout.ms).",
							NULL, &kp_group_min_session_timeout_ms, 6000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_max_session_timeout_ms",
							"Largest session timeout a member may ask for (Kafka's group.max.session.timeout.ms).",
							NULL, &kp_group_max_session_timeout_ms, 1800000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.offsets_retention_minutes",
							"Committed offsets expire after this long, as Kafka's offsets.retention.minutes: a classic group's once it has been empty this long, others' this long after their commit.",
							NULL, &kp_offsets_retention_minutes, 10080, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.offsets_retention_check_interval_ms",
							"How often expired committed offsets are looked for (Kafka's offsets.retention.check.interval.ms).",
							NULL, &kp_offsets_retention_check_interval_ms, 600000, 1000, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	RegisterXactCallback(group_xact_callback, NULL);
	kp_group_consumer_init_gucs();
}

void
kp_group_wakeup(void)
{
	wake_at_commit = true;
}

void
kp_group_save(const char *group_id, const KpGroupRow *g)
{
	kp_cat_group_save_classic(group_id, g);
	kp_group_wakeup();
}

int64
kp_group_now_ms(void)
{
	return GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

KpMemberRow *
kp_group_find_member(KpMemberRow *m, int n, const char *member_id)
{
	int			i;

	if (member_id == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (strcmp(m[i].member_id, member_id) == 0)
			return &m[i];
	return NULL;
}

KpMemberRow *
kp_group_find_instance(KpMemberRow *m, int n, const char *instance_id)
{
	int			i;

	if (instance_id == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (m[i].instance_id && strcmp(m[i].instance_id, instance_id) == 0)
			return &m[i];
	return NULL;
}

/* How many of the rows are members: not pending (KP_MEMBER_PENDING). */
int
kp_group_count_members(const KpMemberRow *m, int n)
{
	int			count = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (!KP_MEMBER_PENDING(&m[i]))
			count++;
	return count;
}

/*
 * Kafka's validateMember, its instance part: a member that names an
 * instance id is judged by the member holding that instance, whoever asks:
 * UNKNOWN_MEMBER_ID when nobody holds it, FENCED_INSTANCE_ID when another
 * member id does (a static member that was replaced, or a member sending an
 * instance id not its own).  NONE without an instance id.
 */
int16
kp_group_check_instance(KpMemberRow *m, int n, const char *member_id, const char *instance_id)
{
	KpMemberRow *holder;

	if (instance_id == NULL)
		return KP_ERR_NONE;
	holder = kp_group_find_instance(m, n, instance_id);
	if (holder == NULL)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	if (member_id == NULL || strcmp(holder->member_id, member_id) != 0)
		return KP_ERR_FENCED_INSTANCE_ID;
	return KP_ERR_NONE;
}

/*
 * Lock an existing group and find a member in it, as Kafka's validateMember
 * for a Heartbeat, SyncGroup or OffsetCommit: the instance id first
 * (kp_group_check_instance), then UNKNOWN_MEMBER_ID when the group or the
 * member is gone, or only pending (KIP-394: no member until it joins with
 * its id, as Kafka's hasMember).
 */
int16
kp_group_lock_member(const char *group_id, const char *member_id, const char *instance_id,
					 KpGroupRow *g, KpMemberRow **m, int *n, KpMemberRow **me)
{
	int16		code;

	*m = NULL;
	*n = 0;
	*me = NULL;
	kp_cat_group_read(group_id, false, true, g);
	if (!g->exists)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	*n = kp_cat_members_load(group_id, m);
	code = kp_group_check_instance(*m, *n, member_id, instance_id);
	if (code != KP_ERR_NONE)
		return code;
	*me = kp_group_find_member(*m, *n, member_id);
	if (*me != NULL && KP_MEMBER_PENDING(*me))
		*me = NULL;
	if (*me == NULL)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	return KP_ERR_NONE;
}
