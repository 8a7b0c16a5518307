/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  Looking at and removing groups: DescribeGroups, ListGroups,
 *	  DeleteGroups, OffsetDelete (kafka-consumer-groups --describe, --list,
 *	  --delete, --delete-offsets).
 *
 * Describing and listing read without the group lock (a snapshot of the
 * rows); deleting takes it, and refuses a group with members as Kafka does
 * (NON_EMPTY_GROUP, GROUP_SUBSCRIBED_TO_TOPIC).
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

int16
kp_group_delete_offsets(const char *group_id, const char *topic, int32 partition)
{
	KpGroupRow	g;

	kp_cat_group_read(group_id, false, true, &g);
	if (!g.exists)
		return KP_ERR_GROUP_ID_NOT_FOUND;
	if (strcmp(g.state, "Empty") != 0)
		return KP_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
	kp_cat_offsets_delete(group_id, topic, partition);
	return KP_ERR_NONE;
}
