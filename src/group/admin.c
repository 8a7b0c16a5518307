/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  Looking at and removing groups: DescribeGroups, ListGroups,
 *	  DeleteGroups, OffsetDelete (kafka-consumer-groups --describe, --list,
 *	  --delete, --delete-offsets).
 *
 * Describing and listing read without the group lock (a snapshot of the
 * rows); deleting takes it, and refuses a group with members as Kafka does
 * (NON_EMPTY_GROUP; OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for a topic a
 * member subscribes to).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "group/group_int.h"
#include "protocol/errors.h"

static KpBlob
copy_blob(KpBlob b)
{
	KpBlob		out = {NULL, 0};

	if (b.len > 0)
	{
		char	   *copy = palloc(b.len);

		memcpy(copy, b.data, b.len);
		out.data = copy;
		out.len = b.len;
	}
	return out;
}

void
kp_group_describe(const char *group_id, KpGroupInfo *info)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	int			i;

	memset(info, 0, sizeof(*info));
	info->state = "Dead";
	info->protocol_type = "";
	info->protocol_name = "";
	kp_cat_group_read(group_id, false, false, &g);
	if (!g.exists)
		return;
	info->exists = true;
	info->classic = strcmp(g.group_type, "classic") == 0;
	info->state = g.state;
	info->protocol_type = g.protocol_type;
	info->protocol_name = g.protocol_name ? g.protocol_name : "";
	info->generation_id = g.generation;
	n = kp_cat_members_load(group_id, &m);
	info->members = palloc0(sizeof(KpGroupMemberInfo) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpGroupMemberInfo *mi = &info->members[info->nmembers];
		int			k;

		if (KP_MEMBER_PENDING(&m[i]))
			continue;
		mi->member_id = m[i].member_id;
		mi->group_instance_id = m[i].instance_id;
		mi->client_id = m[i].client_id;
		mi->client_host = m[i].client_host;
		mi->metadata.len = 0;
		for (k = 0; k < m[i].nprotocols; k++)
			if (strcmp(m[i].protocol_names[k], info->protocol_name) == 0 &&
				m[i].protocol_metadata[k].len > 0)
				mi->metadata = copy_blob(m[i].protocol_metadata[k]);
		mi->assignment = copy_blob(m[i].assignment);
		info->nmembers++;
	}
}

int
kp_group_list(char ***group_ids, char ***states, char ***protocol_types)
{
	return kp_cat_groups_list(group_ids, states, protocol_types);
}

int16
kp_group_delete(const char *group_id)
{
	KpGroupRow	g;

	kp_cat_group_read(group_id, false, true, &g);
	if (!g.exists && !kp_cat_offsets_exist(group_id))
		return KP_ERR_GROUP_ID_NOT_FOUND;
	if (g.exists && strcmp(g.state, "Empty") != 0)
		return KP_ERR_NON_EMPTY_GROUP;
	kp_cat_offsets_delete(group_id, NULL, -1);
	kp_cat_group_delete(group_id);
	return KP_ERR_NONE;
}

/*
 * OffsetDelete's checks, as Kafka's group coordinator makes them
 * (validateOffsetDelete, then isSubscribedToTopic per topic), under the
 * group's lock: GROUP_ID_NOT_FOUND; NON_EMPTY_GROUP for a classic group
 * with members whose protocol type is not "consumer" (its subscriptions
 * cannot be read); else NONE, and subscribed[i] for each of topics some
 * member subscribes to: a consumer group's members by their names or
 * pattern (as the assignor resolves them), a classic group's by their
 * subscription metadata (every topic when one of them does not decode, as
 * Kafka's subscribedTopics is then unknown), an empty group's none.
 */
int16
kp_group_offset_delete_check(const char *group_id, char *const *topics, int ntopics, bool *subscribed)
{
	KpGroupRow	g;
	char	  **names;
	int			nnames;
	bool		known;
	int			i;
	int			j;

	memset(subscribed, 0, sizeof(bool) * ntopics);
	kp_cat_group_read(group_id, false, true, &g);
	if (!g.exists || strcmp(g.state, "Dead") == 0)
		return KP_ERR_GROUP_ID_NOT_FOUND;
	if (strcmp(g.group_type, "consumer") == 0)
	{
		kp_group_consumer_subscribed(group_id, topics, ntopics, subscribed);
		return KP_ERR_NONE;
	}
	if (strcmp(g.state, "Empty") == 0)
		return KP_ERR_NONE;
	if (strcmp(g.protocol_type, "consumer") != 0)
		return KP_ERR_NON_EMPTY_GROUP;
	known = kp_group_classic_subscriptions(group_id, g.protocol_name, &names, &nnames) >= 0;
	for (i = 0; i < ntopics; i++)
	{
		subscribed[i] = !known;
		for (j = 0; j < nnames && !subscribed[i]; j++)
			subscribed[i] = strcmp(names[j], topics[i]) == 0;
	}
	return KP_ERR_NONE;
}

/* Deletes a committed offset (OffsetDelete, after kp_group_offset_delete_check). */
void
kp_group_delete_offset(const char *group_id, const char *topic, int32 partition)
{
	kp_cat_offsets_delete(group_id, topic, partition);
}
