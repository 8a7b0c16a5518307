/*-------------------------------------------------------------------------
 *
 * share.c
 *	  Share groups (KIP-932): membership, acquisition and acknowledgement
 *	  of records, and the share.* group configs.  The rules are written in
 *	  src/share/README; the rows are src/catalog/share.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "utils/guc.h"

#include "catalog/share_catalog.h"
#include "codec/codec.h"
#include "protocol/errors.h"
#include "protocol/protocol.h"
#include "share/share.h"
#include "store/store.h"

int			kp_share_record_lock_duration_ms = 30000;
int			kp_share_min_record_lock_duration_ms = 15000;
int			kp_share_max_record_lock_duration_ms = 60000;
int			kp_share_delivery_count_limit = 5;
int			kp_share_session_timeout_ms = 45000;
int			kp_share_heartbeat_interval_ms = 5000;

/* ---------------------------------------------------------------------
 * Group configs
 * ---------------------------------------------------------------------
 */

typedef struct ShareConfigs
{
	int32		lock_ms;
	int32		delivery_limit;
	bool		earliest;
	bool		read_committed;
} ShareConfigs;

static void
load_configs(const char *group_id, ShareConfigs *c)
{
	char	  **names;
	char	  **values;
	int			n = kp_cat_group_configs_load(group_id, &names, &values);
	int			i;

	c->lock_ms = kp_share_record_lock_duration_ms;
	c->delivery_limit = kp_share_delivery_count_limit;
	c->earliest = false;
	c->read_committed = false;
	for (i = 0; i < n; i++)
	{
		if (strcmp(names[i], "share.record.lock.duration.ms") == 0)
			c->lock_ms = (int32) strtol(values[i], NULL, 10);
		else if (strcmp(names[i], "share.delivery.count.limit") == 0)
			c->delivery_limit = (int32) strtol(values[i], NULL, 10);
		else if (strcmp(names[i], "share.auto.offset.reset") == 0)
			c->earliest = pg_strcasecmp(values[i], "earliest") == 0;
		else if (strcmp(names[i], "share.isolation.level") == 0)
			c->read_committed = pg_strcasecmp(values[i], "read_committed") == 0;
	}
}

int32
kp_share_lock_duration_ms(const char *group_id)
{
	ShareConfigs c;

	load_configs(group_id, &c);
	return c.lock_ms;
}

static char *
check_int(const char *name, const char *value, long lo, long hi)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (value[0] == '\0' || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX)
		return psprintf("Invalid value %s for configuration %s: Not a number of type INT", value, name);
	if (v < lo || v > hi)
		return psprintf("%s must be in the range %ld to %ld inclusive.", name, lo, hi);
	return NULL;
}

char *
kp_share_config_check(const char *name, const char *value, bool *known)
{
	*known = true;

	/*
	 * At least 1000 (the config's own bound), then within the broker's, as
	 * Kafka's GroupConfig checks it
	 */
	if (strcmp(name, "share.record.lock.duration.ms") == 0)
	{
		char	   *why = check_int(name, value, INT_MIN, INT_MAX); /* a number */

		if (why == NULL && atoi(value) < 1000)
			why = psprintf("Invalid value %s for configuration %s: Value must be at least 1000",
						   value, name);
		return why ? why : check_int(name, value, kp_share_min_record_lock_duration_ms,
									 kp_share_max_record_lock_duration_ms);
	}
	if (strcmp(name, "share.delivery.count.limit") == 0)
		return check_int(name, value, 2, 10);
	if (strcmp(name, "share.auto.offset.reset") == 0)
	{
		if (pg_strcasecmp(value, "earliest") == 0 || pg_strcasecmp(value, "latest") == 0)
			return NULL;
		if (pg_strncasecmp(value, "by_duration:", 12) == 0)
			return psprintf("kafka_pg does not support share.auto.offset.reset by_duration yet: use earliest or latest.");
		return psprintf("Invalid value %s for configuration share.auto.offset.reset: String must be one of: latest, earliest, by_duration:PnDTnHnMn.nS",
						value);
	}
	if (strcmp(name, "share.isolation.level") == 0)
	{
		if (strcmp(value, "read_committed") == 0 || strcmp(value, "read_uncommitted") == 0)
			return NULL;
		return psprintf("Invalid value %s for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
						value);
	}
	*known = false;
	return NULL;
}

/* ---------------------------------------------------------------------
 * Membership
 * ---------------------------------------------------------------------
 */

/*
 * Every partition of the subscribed topics that exist, sorted; and its text,
 * "name/id:0,1|other/id:3", the topics' catalog ids in it: a topic deleted
 * and created again under its name is another topic (another TopicId on the
 * wire), so the assignment changes and the member is sent the new one, as
 * Kafka's coordinator does when a subscribed topic's id changes.  Without
 * it the member kept fetching the deleted topic's id (UNKNOWN_TOPIC_ID) and
 * never the new topic's records (confluent-kafka-python's
 * test_topic_recreate_resumes_with_fresh_delivery).
 */
static char *
assignment_for(int nsubscribed, char **subscribed, int *n, char ***topics, int32 **partitions)
{
	StringInfoData s;
	char	  **sorted = palloc(sizeof(char *) * Max(nsubscribed, 1));
	int			total = 0;
	int			cap = 16;
	int			i;
	int			j;

	memcpy(sorted, subscribed, sizeof(char *) * nsubscribed);
	for (i = 1; i < nsubscribed; i++)
		for (j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--)
		{
			char	   *t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	*topics = palloc(sizeof(char *) * cap);
	*partitions = palloc(sizeof(int32) * cap);
	initStringInfo(&s);
	for (i = 0; i < nsubscribed; i++)
	{
		const KpTopic *t;

		if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
			continue;
		t = kp_topic_open(sorted[i], AccessShareLock, true);
		if (t == NULL)
			continue;
		appendStringInfo(&s, "%s%s/%d:", s.len > 0 ? "|" : "", t->name, t->topic_id);
		for (j = 0; j < t->partition_count; j++)
		{
			if (total == cap)
			{
				cap *= 2;
				*topics = repalloc(*topics, sizeof(char *) * cap);
				*partitions = repalloc(*partitions, sizeof(int32) * cap);
			}
			(*topics)[total] = pstrdup(t->name);
			(*partitions)[total] = j;
			total++;
			appendStringInfo(&s, "%s%d", j > 0 ? "," : "", j);
		}
	}
	*n = total;
	return s.data;
}

/* Remove expired members, releasing their records; true if any went. */
static bool
expire_members(const char *group_id)
{
	char	  **gone;
	int			n = kp_cat_share_members_expire(group_id, kp_share_session_timeout_ms, &gone);
	int			i;

	for (i = 0; i < n; i++)
		kp_share_release_member(group_id, gone[i]);
	return n > 0;
}

int16
kp_share_heartbeat(const KpShareHeartbeatArgs *a, KpShareHeartbeatResult *r)
{
	KpShareMemberRow m;
	int32		group_epoch;
	bool		exists;
	bool		changed = false;
	char	   *assigned;

	memset(r, 0, sizeof(*r));
	r->heartbeat_interval_ms = kp_share_heartbeat_interval_ms;
	r->member_epoch = a->member_epoch;

	/*
	 * Kafka's checks (GroupCoordinatorService.
	 * throwIfShareGroupHeartbeatRequestIsInvalid), in its order and words
	 */
	if (kp_java_blank(a->member_id ? a->member_id : ""))
		r->error_message = pstrdup("MemberId can't be empty.");
	else if (kp_java_blank(a->group_id ? a->group_id : ""))
		r->error_message = pstrdup("GroupId can't be empty.");
	else if (kp_java_blank(a->rack_id))
		r->error_message = pstrdup("RackId can't be empty.");
	else if (a->member_epoch == 0 && a->nsubscribed <= 0)
		r->error_message = pstrdup("SubscribedTopicNames must be set in first request.");
	else if (a->member_epoch < -1)
		r->error_message = pstrdup("MemberEpoch is invalid.");
	if (r->error_message != NULL)
		return KP_ERR_INVALID_REQUEST;
	if (kp_cat_share_is_other_group(a->group_id))
	{
		r->error_message = psprintf("Group %s is not a share group.", a->group_id);
		return KP_ERR_GROUP_ID_NOT_FOUND;
	}

	/* only a member joining (epoch 0) makes the group, as in Kafka */
	group_epoch = kp_cat_share_group_lock(a->group_id, a->member_epoch == 0);
	if (group_epoch < 0)
	{
		r->error_message = psprintf(a->member_epoch > 0 ? "Share group %s not found." : "Group %s not found.",
									a->group_id);
		return KP_ERR_GROUP_ID_NOT_FOUND;
	}
	if (expire_members(a->group_id))
		changed = true;
	exists = kp_cat_share_member_read(a->group_id, a->member_id, &m);

	if (a->member_epoch == -1)
	{
		if (exists)
		{
			kp_cat_share_member_delete(a->group_id, a->member_id);
			if (!a->keep_records)
				kp_share_release_member(a->group_id, a->member_id);
			changed = true;
		}
		if (changed)
			kp_cat_share_group_set_epoch(a->group_id, group_epoch + 1);
		if (!exists)
		{
			r->error_message = psprintf("Member %s is not a member of group %s.", a->member_id, a->group_id);
			return KP_ERR_UNKNOWN_MEMBER_ID;
		}
		r->member_epoch = -1;
		return KP_ERR_NONE;
	}
	if (a->member_epoch > 0)
	{
		if (!exists)
		{
			if (changed)
				kp_cat_share_group_set_epoch(a->group_id, group_epoch + 1);
			r->error_message = psprintf("Member %s is not a member of group %s.", a->member_id, a->group_id);
			return KP_ERR_UNKNOWN_MEMBER_ID;
		}
		if (a->member_epoch != m.member_epoch)
		{
			if (changed)
				kp_cat_share_group_set_epoch(a->group_id, group_epoch + 1);
			r->error_message = a->member_epoch > m.member_epoch ?
				psprintf("The share group member has a greater member epoch (%d) than the one known by the "
						 "group coordinator (%d). The member must abandon all its partitions and rejoin.",
						 a->member_epoch, m.member_epoch) :
				psprintf("The share group member has a smaller member epoch (%d) than the one known by the "
						 "group coordinator (%d). The member must abandon all its partitions and rejoin.",
						 a->member_epoch, m.member_epoch);
			return KP_ERR_FENCED_MEMBER_EPOCH;
		}
	}
	if (!exists)
	{
		memset(&m, 0, sizeof(m));
		m.member_id = pstrdup(a->member_id);
		m.member_epoch = 0;
		m.assigned = pstrdup("");
		changed = true;
	}
	m.client_id = (char *) (a->client_id ? a->client_id : "");
	m.client_host = (char *) (a->client_host ? a->client_host : "");
	if (a->rack_id)
		m.rack_id = (char *) a->rack_id;
	if (a->nsubscribed >= 0)
	{
		bool		same = a->nsubscribed == m.nsubscribed;
		int			i;

		for (i = 0; same && i < a->nsubscribed; i++)
			same = strcmp(a->subscribed[i] ? a->subscribed[i] : "", m.subscribed[i]) == 0;
		if (!same)
		{
			m.nsubscribed = a->nsubscribed;
			m.subscribed = palloc(sizeof(char *) * Max(a->nsubscribed, 1));
			for (i = 0; i < a->nsubscribed; i++)
				m.subscribed[i] = a->subscribed[i] ? a->subscribed[i] : "";
			changed = true;
		}
	}

	/*
	 * every partition of the subscribed topics; new topics and partitions
	 * move it
	 */
	assigned = assignment_for(m.nsubscribed, m.subscribed, &r->nassigned,
							  &r->assigned_topics, &r->assigned_partitions);
	if (strcmp(assigned, m.assigned) != 0)
		changed = true;
	if (changed)
	{
		group_epoch++;
		kp_cat_share_group_set_epoch(a->group_id, group_epoch);
	}
	if (a->member_epoch == 0 || m.member_epoch != group_epoch)
	{
		if (strcmp(assigned, m.assigned) != 0 || a->member_epoch == 0 || !exists)
		{
			m.member_epoch = group_epoch;
			r->send_assignment = true;
		}
	}
	m.assigned = assigned;
	kp_cat_share_member_upsert(a->group_id, &m);
	r->member_epoch = m.member_epoch;
	return KP_ERR_NONE;
}

static void
parse_assigned(const char *text, int *n, char ***topics, int32 **partitions)
{
	char	   *copy = pstrdup(text ? text : "");
	char	   *save1 = NULL;
	char	   *tp;
	int			cap = 16;

	*n = 0;
	*topics = palloc(sizeof(char *) * cap);
	*partitions = palloc(sizeof(int32) * cap);
	for (tp = strtok_r(copy, "|", &save1); tp; tp = strtok_r(NULL, "|", &save1))
	{
		char	   *colon = strrchr(tp, ':');
		char	   *save2 = NULL;
		char	   *p;

		if (colon == NULL)
			continue;
		*colon = '\0';

		/*
		 * the topic's id after its name (assignment_for; none before
		 * 2026-12-07)
		 */
		if (strchr(tp, '/'))
			*strchr(tp, '/') = '\0';
		for (p = strtok_r(colon + 1, ",", &save2); p; p = strtok_r(NULL, ",", &save2))
		{
			if (*n == cap)
			{
				cap *= 2;
				*topics = repalloc(*topics, sizeof(char *) * cap);
				*partitions = repalloc(*partitions, sizeof(int32) * cap);
			}
			(*topics)[*n] = tp;
			(*partitions)[*n] = (int32) strtol(p, NULL, 10);
			(*n)++;
		}
	}
}

void
kp_share_describe(const char *group_id, KpShareGroupInfo *info)
{
	KpShareMemberRow *rows;
	int			i;

	memset(info, 0, sizeof(*info));
	info->exists = kp_cat_share_group_exists(group_id);
	if (!info->exists)
	{
		info->state = pstrdup("Dead");
		return;
	}
	{
		char	  **ids;
		int32	   *epochs;
		int			n = kp_cat_share_groups_list(&ids, &epochs);

		for (i = 0; i < n; i++)
			if (strcmp(ids[i], group_id) == 0)
				info->group_epoch = epochs[i];
	}
	info->nmembers = kp_cat_share_members(group_id, &rows);
	info->state = pstrdup(info->nmembers > 0 ? "Stable" : "Empty");
	info->members = palloc0(sizeof(KpShareMemberInfo) * Max(info->nmembers, 1));
	for (i = 0; i < info->nmembers; i++)
	{
		KpShareMemberInfo *mi = &info->members[i];

		mi->member_id = rows[i].member_id;
		mi->rack_id = rows[i].rack_id;
		mi->member_epoch = rows[i].member_epoch;
		mi->client_id = rows[i].client_id;
		mi->client_host = rows[i].client_host;
		mi->nsubscribed = rows[i].nsubscribed;
		mi->subscribed = rows[i].subscribed;
		parse_assigned(rows[i].assigned, &mi->nassigned, &mi->assigned_topics, &mi->assigned_partitions);
	}
}

int
kp_share_list(char ***group_ids, char ***states)
{
	int32	   *epochs;
	int			n = kp_cat_share_groups_list(group_ids, &epochs);
	int			i;

	*states = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*states)[i] = pstrdup(epochs[n + i] > 0 ? "Stable" : "Empty");
	return n;
}

int16
kp_share_delete_group(const char *group_id)
{
	KpShareMemberRow *rows;

	if (kp_cat_share_group_lock(group_id, false) < 0)
		return KP_ERR_GROUP_ID_NOT_FOUND;
	expire_members(group_id);
	if (kp_cat_share_members(group_id, &rows) > 0)
		return KP_ERR_NON_EMPTY_GROUP;
	kp_cat_share_group_delete(group_id);
	return KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * Records
 * ---------------------------------------------------------------------
 */

/* Append run [first, last] to the acquired records, one entry per offset. */
static void
acquired_add(KpShareAcquired *out, int *cap, int64 first, int64 last, int16 delivery_count)
{
	int64		o;

	for (o = first; o <= last; o++)
	{
		if (out->n == *cap)
		{
			*cap = Max(16, *cap * 2);
			out->offsets = out->offsets ? repalloc(out->offsets, sizeof(int64) * *cap) :
				palloc(sizeof(int64) * *cap);
			out->delivery_counts = out->delivery_counts ?
				repalloc(out->delivery_counts, sizeof(int16) * *cap) : palloc(sizeof(int16) * *cap);
		}
		out->offsets[out->n] = o;
		out->delivery_counts[out->n] = delivery_count;
		out->n++;
	}
}

int16
kp_share_acquire(const char *group_id, const KpTopic *topic, int32 partition,
				 const char *member_id, int max_records, bool record_limit,
				 uint64 holder_xid, bool wait, KpShareAcquired *out)
{
	ShareConfigs c;
	KpLogOffsets off;
	int64		partition_id;
	int64		spso;
	int64		speo;
	int64		archived;
	int64		bound;
	int64		latest;
	int64		from;
	KpShareRun *runs;
	int			nruns;
	int			cap = 0;
	int			i;

	memset(out, 0, sizeof(*out));
	if (partition < 0 || partition >= topic->partition_count)
		return KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (max_records <= 0)
		max_records = 500;
	partition_id = topic->partition_ids[partition];
	load_configs(group_id, &c);
	kp_log_offsets(partition_id, &off);

	/*
	 * What the acquirer may read.  A wire consumer: what Kafka's consumers
	 * read, up to the high watermark, and for read_committed up to the last
	 * stable offset clients see (a decided transaction only once its marker
	 * is below the high watermark).  A SQL transaction (holder_xid): what
	 * kafka.fetch reads, up to the log end (its own commit flushes what it
	 * read before anything it did with it can be seen).
	 */
	if (holder_xid == 0)
	{
		latest = off.high_watermark;
		bound = c.read_committed ? kp_client_lso(&off) : off.high_watermark;
		if (off.high_watermark < off.log_end_offset)
			out->hw_next_lsn = off.hw_next_lsn;
	}
	else
	{
		latest = off.log_end_offset;
		bound = c.read_committed ? off.last_stable_offset : off.log_end_offset;
	}

	/*
	 * A new share-partition starts at the log start or at the end its first
	 * acquirer sees (for a wire consumer the high watermark, what ListOffsets
	 * LATEST answers: records above it are delivered once it passes them)
	 */
	if (!kp_cat_share_partition_lock(group_id, topic->name, partition, topic->topic_id,
									 c.earliest ? off.log_start_offset : latest, wait,
									 &spso, &speo))
	{
		out->busy = true;
		return KP_ERR_NONE;
	}
	archived = kp_cat_share_expire(group_id, topic->name, partition, c.delivery_limit);

	/*
	 * redeliveries first, whole runs (the last split at max_records); all
	 * below SPEO, so before the new records by offset
	 */
	nruns = kp_cat_share_take_available(group_id, topic->name, partition, member_id, holder_xid,
										c.lock_ms, max_records, &runs);
	for (i = 0; i < nruns; i++)
		acquired_add(out, &cap, runs[i].first, runs[i].last, runs[i].delivery_count);

	/*
	 * then new records from SPEO: the visible batches that follow each other
	 * make one run, one row
	 */
	from = Max(speo, off.log_start_offset);
	if (out->n < max_records && from < bound)
	{
		KpLogReader *reader = kp_log_cursor_open(partition_id, from,
												 c.read_committed ? KP_READ_COMMITTED : KP_READ_UNCOMMITTED);
		const char *batch;
		size_t		len;
		KpBatchVisibility vis;
		int64		run_first = -1;
		int64		run_last = -1;

		while (out->n + (run_first < 0 ? 0 : run_last - run_first + 1) < max_records &&
			   kp_log_cursor_next(reader, &batch, &len, &vis))
		{
			KpBatchHeader hdr;
			int64		first;
			int64		last;
			int64		taken = out->n + (run_first < 0 ? 0 : run_last - run_first + 1);

			if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK || hdr.base_offset >= bound)
				break;
			last = Min(KpBatchLastOffset(&hdr), bound - 1);
			if (last < from)
				continue;
			first = Max(hdr.base_offset, from);
			if (vis != KP_BATCH_VISIBLE)
			{
				/* markers and aborted records: done, and the end of a run */
				if (run_first >= 0)
				{
					kp_cat_share_take_new(group_id, topic->name, partition, member_id, holder_xid,
										  c.lock_ms, run_first, run_last);
					acquired_add(out, &cap, run_first, run_last, 1);
					run_first = -1;
				}
				from = last + 1;
				continue;
			}
			if (record_limit && last - first + 1 > max_records - taken)
				last = first + (max_records - taken) - 1;
			if (run_first >= 0 && first != run_last + 1)
			{
				/*
				 * offsets the log cleaner removed between batches: not in a
				 * run
				 */
				kp_cat_share_take_new(group_id, topic->name, partition, member_id, holder_xid,
									  c.lock_ms, run_first, run_last);
				acquired_add(out, &cap, run_first, run_last, 1);
				run_first = -1;
			}
			if (run_first < 0)
				run_first = first;
			run_last = last;
			from = last + 1;
		}
		kp_log_reader_close(reader);
		if (run_first >= 0)
		{
			kp_cat_share_take_new(group_id, topic->name, partition, member_id, holder_xid, c.lock_ms,
								  run_first, run_last);
			acquired_add(out, &cap, run_first, run_last, 1);
		}
	}
	kp_cat_share_partition_advance(group_id, topic->name, partition, Max(from, speo),
								   off.log_start_offset, archived, spso);

	/*
	 * A parked ShareFetch looks again when these locks expire; and, as Kafka
	 * checks its delayed share fetches when a share-partition's fetch lock is
	 * released, those that found this share-partition busy look again when
	 * this transaction commits: it took records, more may be left (wake.c).
	 * Not when it took none: parked fetches would wake each other for
	 * nothing.
	 */
	if (out->n > 0)
	{
		kp_share_note_lock_deadline(partition_id,
									GetCurrentTimestamp() + (TimestampTz) c.lock_ms * 1000);
		kp_share_wake_at_commit(partition_id);
	}
	return KP_ERR_NONE;
}

void
kp_share_read_batches(int64 partition_id, const KpShareAcquired *acq, int64 max_bytes, StringInfo out)
{
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	int			k = 0;

	if (acq->n == 0)
		return;
	reader = kp_log_reader_open(partition_id, acq->offsets[0]);
	while (k < acq->n && kp_log_reader_next(reader, &batch, &len))
	{
		KpBatchHeader hdr;
		int64		last;

		if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK)
			break;
		last = KpBatchLastOffset(&hdr);
		while (k < acq->n && acq->offsets[k] < hdr.base_offset)
			k++;				/* gone meanwhile (retention): nothing to send */
		if (k < acq->n && acq->offsets[k] <= last)
		{
			if (out->len > 0 && out->len + (int64) len > max_bytes)
				break;
			appendBinaryStringInfo(out, batch, len);
			while (k < acq->n && acq->offsets[k] <= last)
				k++;
		}
	}
	kp_log_reader_close(reader);
}

int16
kp_share_acknowledge(const char *group_id, const char *topic, int32 partition,
					 const char *member_id, int64 first, int64 last,
					 int ntypes, const int8 *types, bool move_start)
{
	int64		done;
	int64		start;
	int64		end;
	int64		spso = -1;
	bool		terminal = false;
	int32		lock_ms = kp_share_record_lock_duration_ms;
	int			i;

	if (first < 0 || last < first || ntypes <= 0 ||
		(ntypes != 1 && (int64) ntypes != last - first + 1))
		return KP_ERR_INVALID_REQUEST;
	for (i = 0; i < ntypes; i++)
		if (types[i] < KP_ACK_GAP || types[i] > KP_ACK_RENEW)
			return KP_ERR_INVALID_REQUEST;
	/* the group's lock duration, read only when a renew needs it */
	for (i = 0; i < ntypes; i++)
		if (types[i] == KP_ACK_RENEW)
		{
			lock_ms = kp_share_lock_duration_ms(group_id);
			break;
		}
	done = kp_cat_share_acknowledge(group_id, topic, partition, member_id, first, last, ntypes, types,
									lock_ms);
	if (done > 0)
	{
		bool		release = false;
		bool		renew = false;

		for (i = 0; i < ntypes; i++)
		{
			release |= types[i] == KP_ACK_RELEASE;
			renew |= types[i] == KP_ACK_RENEW;
		}
		/* released records: the parked ShareFetches may take them (wake.c) */
		if (release || renew)
		{
			int64		partition_id = kp_share_partition_id(topic, partition);

			if (release)
				kp_share_wake_at_commit(partition_id);
			if (renew)
				kp_share_note_lock_deadline(partition_id,
											GetCurrentTimestamp() + (TimestampTz) lock_ms * 1000);
		}
	}

	/*
	 * move SPSO now if the share-partition is free (else at the next
	 * acquisition)
	 */
	if (move_start &&
		kp_cat_share_partition_lock(group_id, topic, partition, -1, -1, false, &start, &end))
		spso = kp_cat_share_partition_advance(group_id, topic, partition, end, start, 0, start);

	/*
	 * records done now and still in the window (not behind the SPSO just
	 * moved, whose rows went): merge them with the done runs around them
	 */
	for (i = 0; i < ntypes && done > 0 && !terminal; i++)
		terminal = types[i] == KP_ACK_GAP || types[i] == KP_ACK_ACCEPT || types[i] == KP_ACK_REJECT;
	if (terminal && last >= spso)
		kp_cat_share_merge_done(group_id, topic, partition, Max(first, spso), last);
	if (done != last - first + 1)
		return KP_ERR_INVALID_RECORD_STATE;
	return KP_ERR_NONE;
}

void
kp_share_release_member(const char *group_id, const char *member_id)
{
	char	  **topics;
	int32	   *parts;
	int			n = kp_cat_share_release_member(group_id, member_id, &topics, &parts);
	int			i;

	/* the partitions whose records it held, and only those (wake.c) */
	for (i = 0; i < n; i++)
		kp_share_wake_at_commit(kp_share_partition_id(topics[i], parts[i]));
}

int64
kp_share_start_offset(const char *group_id, const char *topic, int32 partition)
{
	char	  **topics;
	int32	   *parts;
	int64	   *starts;
	int			n = kp_cat_share_partitions(group_id, &topics, &parts, &starts);
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(topics[i], topic) == 0 && parts[i] == partition)
			return starts[i];
	return -1;
}

void
kp_share_init_gucs(void)
{
	DefineCustomIntVariable("kafka.group_share_record_lock_duration_ms",
							"How long a share group's consumer holds a record it acquired (Kafka's group.share.record.lock.duration.ms).",
							NULL, &kp_share_record_lock_duration_ms, 30000, 1000, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_share_min_record_lock_duration_ms",
							"Smallest share.record.lock.duration.ms a share group may be given (Kafka's group.share.min.record.lock.duration.ms).",
							NULL, &kp_share_min_record_lock_duration_ms, 15000, 1000, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_share_max_record_lock_duration_ms",
							"Largest share.record.lock.duration.ms a share group may be given (Kafka's group.share.max.record.lock.duration.ms).",
							NULL, &kp_share_max_record_lock_duration_ms, 60000, 1000, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_share_delivery_count_limit",
							"Deliveries of a record to share group consumers before it is archived (Kafka's group.share.delivery.count.limit).",
							NULL, &kp_share_delivery_count_limit, 5, 2, 10,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_share_session_timeout_ms",
							"Share group members silent this long are removed (Kafka's group.share.session.timeout.ms).",
							NULL, &kp_share_session_timeout_ms, 45000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_share_heartbeat_interval_ms",
							"The heartbeat interval given to share group members (Kafka's group.share.heartbeat.interval.ms).",
							NULL, &kp_share_heartbeat_interval_ms, 5000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
}

/*
 * Kafka's share-partition lag (KIP-1226): the records from SPSO to the log
 * end not yet delivered to completion, log end - SPSO - (acknowledged and
 * archived records of the window).  Counted here as what is still to come:
 * the offsets past SPEO (never acquired; transaction markers among them
 * count, as in Kafka, which does not read them either) plus the records of
 * the window still available or acquired.  The offsets of the window in no
 * run - transaction markers, aborted records under read_committed, offsets
 * the cleaner removed - are done: a Kafka client acknowledges markers as
 * gaps and Kafka archives aborted records, so there too they leave the lag
 * once acquired.  -1 (unknown) for a partition with no room for its state
 * in shared memory (kp_log_has_room).
 */
int64
kp_share_lag(const char *group_id, const char *topic, int32 partition)
{
	const KpTopic *t = kp_topic_open(topic, AccessShareLock, true);
	KpLogOffsets off;
	int64		start;
	int64		end;
	int64		pending;

	if (t == NULL || partition < 0 || partition >= t->partition_count ||
		!kp_cat_share_partition_stats(group_id, topic, partition, &start, &end, &pending) ||
		!kp_log_has_room(t->partition_ids[partition]))
		return -1;
	kp_log_offsets(t->partition_ids[partition], &off);
	return Max(off.log_end_offset - Max(end, off.log_start_offset), 0) + pending;
}

int
kp_share_partitions(const char *group_id, char ***topics, int32 **partitions, int64 **start_offsets)
{
	return kp_cat_share_partitions(group_id, topics, partitions, start_offsets);
}

bool
kp_share_group_exists_for_admin(const char *group_id)
{
	return kp_cat_share_group_exists(group_id);
}

int16
kp_share_admin_check_empty(const char *group_id, bool create)
{
	KpShareMemberRow *rows;

	if (group_id[0] == '\0')
		return KP_ERR_INVALID_GROUP_ID;
	if (kp_cat_share_is_other_group(group_id))
		return KP_ERR_GROUP_ID_NOT_FOUND;
	if (kp_cat_share_group_lock(group_id, create) < 0)
		return KP_ERR_GROUP_ID_NOT_FOUND;
	expire_members(group_id);
	if (kp_cat_share_members(group_id, &rows) > 0)
		return KP_ERR_NON_EMPTY_GROUP;
	return KP_ERR_NONE;
}

int16
kp_share_alter_start_offset(const char *group_id, const KpTopic *topic, int32 partition, int64 start_offset)
{
	KpLogOffsets off;

	kp_log_offsets(topic->partition_ids[partition], &off);
	if (start_offset < 0)
		return KP_ERR_INVALID_REQUEST;
	start_offset = Max(start_offset, off.log_start_offset);
	start_offset = Min(start_offset, off.log_end_offset);
	kp_cat_share_partition_reset(group_id, topic->name, partition, topic->topic_id, start_offset);
	return KP_ERR_NONE;
}

void
kp_share_delete_topic_state(const char *group_id, const char *topic)
{
	kp_cat_share_partition_delete(group_id, topic, -1);
}

/*
 * DescribeConfigs of a group: the share-group configs kafka_pg applies, with
 * the value in effect (the group's, else the broker's) and its source (Kafka's
 * ConfigSource: 8 DYNAMIC_GROUP_CONFIG, 4 STATIC_BROKER_CONFIG, 5
 * DEFAULT_CONFIG).
 */
int
kp_share_describe_configs(const char *group_id, KpGroupConfigEntry **entries)
{
	static const char *const names[] = {"share.auto.offset.reset", "share.delivery.count.limit",
	"share.isolation.level", "share.record.lock.duration.ms"};
	static const char *const docs[] = {
		"The strategy to initialize the share-partition start offset.",
		"The maximum number of delivery attempts for a record delivered to a share group.",
		"Controls how to read records written transactionally.",
		"The record acquisition lock duration in milliseconds for share groups."
	};
	char	  **stored_names;
	char	  **stored;
	int			n = kp_cat_group_configs_load(group_id, &stored_names, &stored);
	int			k;
	int			i;

	*entries = palloc0(sizeof(KpGroupConfigEntry) * lengthof(names));
	for (k = 0; k < lengthof(names); k++)
	{
		KpGroupConfigEntry *e = &(*entries)[k];

		e->name = names[k];
		e->doc = docs[k];
		e->value = NULL;
		for (i = 0; i < n; i++)
			if (strcmp(stored_names[i], names[k]) == 0)
				e->value = stored[i];
		e->source = e->value ? 8 : 5;
		if (e->value)
			continue;
		switch (k)
		{
			case 0:
				e->value = pstrdup("latest");
				break;
			case 1:
				e->value = psprintf("%d", kp_share_delivery_count_limit);
				e->source = kp_share_delivery_count_limit != 5 ? 4 : 5;
				break;
			case 2:
				e->value = pstrdup("read_uncommitted");
				break;
			default:
				e->value = psprintf("%d", kp_share_record_lock_duration_ms);
				e->source = kp_share_record_lock_duration_ms != 30000 ? 4 : 5;
				break;
		}
	}
	return lengthof(names);
}
