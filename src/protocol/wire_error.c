/*-------------------------------------------------------------------------
 *
 * wire_error.c
 *	  An error response to any request, built from the descriptor tables:
 *	  what Kafka's AbstractRequest.getErrorResponse does per message class,
 *	  done once for every message.
 *
 * The response gets its defaults, every ErrorCode field the given code and
 * every ErrorMessage field the given message.  Arrays are mirrored from the
 * request so that each topic, partition or resource the client asked about
 * has an entry with the error: a response array is paired with the request
 * array of the same name, or, when each side has exactly one array of
 * structs, with that one (Produce's TopicData and Responses).  Inside a
 * mirrored element the fields that identify it (names, topic ids,
 * partition indexes, keys) are copied from the request element.
 *
 * The listener uses it to refuse a request that it must not act on but
 * that Kafka would not drop the connection for (a NUL byte in a name).
 *
 * src/protocol/wire_error.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <string.h>

#include "protocol/protocol.h"

/* Fields that say which topic, partition or resource an element is about. */
static const char *const identity_fields[] = {
	"Name", "Topic", "TopicName", "TopicId", "PartitionIndex", "Partition",
	"Index", "GroupId", "Key", "ResourceType", "ResourceName", NULL
};

static bool
is_identity(const char *name)
{
	for (int i = 0; identity_fields[i]; i++)
		if (strcmp(identity_fields[i], name) == 0)
			return true;
	return false;
}

static bool
is_struct_array(const KpFieldDesc *f, int version)
{
	return (f->flags & KP_F_ARRAY) && f->type == KP_T_STRUCT &&
		KP_VERSION_IN(f->versions, version);
}

/*
 * Arrays that never pair with one of the other side: a request's
 * ForgottenTopicsData (Fetch, ShareFetch: topics the client drops from its
 * session, never answered) and AcknowledgementBatches (ShareFetch,
 * ShareAcknowledge: what the client acknowledges), and a response's
 * NodeEndpoints (KIP-951: the brokers named in it) and AcquiredRecords
 * (ShareFetch: what the broker hands out; an error hands out nothing).
 * Without this, Fetch (Topics and ForgottenTopicsData), Produce v10+ and
 * ShareAcknowledge (Responses and NodeEndpoints) got an error response with
 * no topic at all, and a ShareFetch's partitions would pair its
 * acknowledgements with acquired records.
 */
static bool
never_mirrored(const KpFieldDesc *f)
{
	return strcmp(f->name, "ForgottenTopicsData") == 0 ||
		strcmp(f->name, "NodeEndpoints") == 0 ||
		strcmp(f->name, "AcknowledgementBatches") == 0 ||
		strcmp(f->name, "AcquiredRecords") == 0;
}

/* The request field that response array rf mirrors, or NULL. */
static const KpFieldDesc *
matching_array(const KpStructDesc *qd, const KpStructDesc *rd,
			   const KpFieldDesc *rf, int version)
{
	const KpFieldDesc *only_q = NULL;
	int			nq = 0;
	int			nr = 0;

	if (never_mirrored(rf))
		return NULL;
	for (int i = 0; i < qd->nfields; i++)
	{
		const KpFieldDesc *qf = &qd->fields[i];

		if (!is_struct_array(qf, version) || never_mirrored(qf))
			continue;
		if (strcmp(qf->name, rf->name) == 0)
			return qf;
		only_q = qf;
		nq++;
	}
	for (int i = 0; i < rd->nfields; i++)
		if (is_struct_array(&rd->fields[i], version) && !never_mirrored(&rd->fields[i]))
			nr++;
	return (nq == 1 && nr == 1) ? only_q : NULL;
}

/* The request field that identity field rf copies, or NULL. */
static const KpFieldDesc *
matching_identity(const KpStructDesc *qd, const KpFieldDesc *rf, int version)
{
	if (!is_identity(rf->name))
		return NULL;
	for (int i = 0; i < qd->nfields; i++)
	{
		const KpFieldDesc *qf = &qd->fields[i];

		if (strcmp(qf->name, rf->name) == 0 && qf->type == rf->type &&
			qf->flags == rf->flags && !(qf->flags & KP_F_ARRAY) &&
			qf->type != KP_T_STRUCT && KP_VERSION_IN(qf->versions, version))
			return qf;
	}
	return NULL;
}

static void
fill_struct(const KpStructDesc *qd, const char *q, const KpStructDesc *rd,
			char *r, int version, int16 code, const char *message)
{
	for (int i = 0; i < rd->nfields; i++)
	{
		const KpFieldDesc *rf = &rd->fields[i];
		const KpFieldDesc *qf;

		if (!KP_VERSION_IN(rf->versions, version))
			continue;
		if (!(rf->flags & KP_F_ARRAY) && rf->type == KP_T_INT16 &&
			strcmp(rf->name, "ErrorCode") == 0)
			*(int16 *) (r + rf->offset) = code;
		else if (!(rf->flags & (KP_F_ARRAY | KP_F_BINARY_STRING)) &&
				 rf->type == KP_T_STRING && strcmp(rf->name, "ErrorMessage") == 0)
			*(const char **) (r + rf->offset) = message;
		else if (is_struct_array(rf, version) &&
				 (qf = matching_array(qd, rd, rf, version)) != NULL)
		{
			int32		n = *(const int32 *) (q + qf->count_offset);
			const char *qelems = *(const char *const *) (q + qf->offset);
			char	   *relems;

			if (n <= 0 || qelems == NULL)
				continue;
			relems = palloc(rf->struct_desc->size * n);
			for (int j = 0; j < n; j++)
			{
				char	   *re = relems + (size_t) j * rf->struct_desc->size;

				kp_init_nested(rf->struct_desc, re);
				fill_struct(qf->struct_desc, qelems + (size_t) j * qf->struct_desc->size,
							rf->struct_desc, re, version, code, message);
			}
			*(int32 *) (r + rf->count_offset) = n;
			*(char **) (r + rf->offset) = relems;
		}
		else if ((qf = matching_identity(qd, rf, version)) != NULL)
			memcpy(r + rf->offset, q + qf->offset, kp_wire_elem_size(rf));
	}
}

void
kp_error_response(const KpApiEntry *api, int version, const void *request,
				  void *response, int16 code, const char *message)
{
	kp_init_struct(api->response, response);
	fill_struct(api->request->root, request, api->response->root, response,
				version, code, message);
}
