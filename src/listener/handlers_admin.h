/*-------------------------------------------------------------------------
 *
 * handlers_admin.h
 *	  What the admin API handlers share (src/listener only): Kafka's
 *	  constants for config resources, sources, types and operations, and
 *	  the small helpers that build response arrays and end validate_only
 *	  operations.
 *
 * The admin handlers are split by what they work on:
 *	  handlers_topics.c		CreateTopics, DeleteTopics, CreatePartitions
 *	  handlers_configs.c	DescribeConfigs, AlterConfigs,
 *							IncrementalAlterConfigs
 *	  handlers_broker_configs.c	their BROKER resource
 *	  handlers_records.c	DeleteRecords, OffsetForLeaderEpoch
 *
 * Every admin handler works resource by resource: each topic (or
 * partition) runs in its own subtransaction through kp_handler_try(), so
 * one bad topic gets its error code and message in the response and the
 * others still succeed, as in Kafka.  The work itself is src/catalog's
 * (kp_topic_*) and src/store's (kp_log_delete_records), the same code the
 * SQL API calls; the handlers only validate what is Kafka-protocol
 * specific (replication factors, manual assignments, duplicate resources,
 * config operations) and fill the response structs.
 *
 * validate_only runs the operation for real inside its subtransaction and
 * then rolls it back by raising SQLSTATE KP000 (rollback_validated), which
 * kp_handler_try maps to error code 0 (NONE): the validation is exactly the
 * operation's.
 *
 * Messages follow Kafka's (ReplicationControlManager, ConfigAdminManager,
 * ControllerApis) where clients or users may match on them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_HANDLERS_ADMIN_H
#define KP_LISTENER_HANDLERS_ADMIN_H

#include "listener/handlers.h"

#define RESOURCE_TOPIC			2
#define RESOURCE_BROKER			4
#define RESOURCE_GROUP			32	/* KIP-848 group configs:
									 * src/group/configs.c */

/* Kafka's DescribeConfigsResponse.ConfigSource */
#define SOURCE_DYNAMIC_TOPIC	1
#define SOURCE_DYNAMIC_BROKER	2
#define SOURCE_DYNAMIC_DEFAULT_BROKER	3
#define SOURCE_STATIC_BROKER	4
#define SOURCE_DEFAULT			5

/* Kafka's DescribeConfigsResponse.ConfigType */
#define CTYPE_UNKNOWN			0
#define CTYPE_BOOLEAN			1
#define CTYPE_STRING			2
#define CTYPE_INT				3
#define CTYPE_SHORT				4
#define CTYPE_LONG				5
#define CTYPE_DOUBLE			6
#define CTYPE_LIST				7

/* Kafka's AlterConfigOp.OpType */
#define OP_SET					0
#define OP_DELETE				1
#define OP_APPEND				2
#define OP_SUBTRACT				3

/* Raised to roll back a validate_only operation; maps to error code 0. */
#define ERRCODE_KP_VALIDATED	MAKE_SQLSTATE('K','P','0','0','0')


/* handlers_configs.c: the broker config a topic config defaults from, and its type */
extern const char *kp_broker_synonym(const char *topic_config);
extern const char *kp_broker_derived_from(const char *broker_config, const char **default_value);
extern int8 kp_config_ctype(const KpConfigDef *def);
extern char *kp_config_list_op(const char *current, int8 op, const char *arg);	/* APPEND, SUBTRACT */

/* handlers_broker_configs.c: the BROKER config resource */
typedef struct KpBrokerConfigEntry
{
	const char *name;
	char	   *value;
	int8		source;			/* SOURCE_* */
	bool		read_only;
	int8		type;			/* CTYPE_* */
	const char *doc;
	const char *default_value;	/* Kafka's default, listed under a set value */
} KpBrokerConfigEntry;

typedef struct KpBrokerConfigOp
{
	const char *name;
	int8		op;				/* OP_*; legacy AlterConfigs: OP_SET */
	const char *value;
} KpBrokerConfigOp;

extern int	kp_broker_config_entries(KpBrokerConfigEntry **out);

/*
 * A BROKER resource's name as Kafka reads it (Integer.parseInt: an optional
 * sign, then digits, within int32): false if it is not a number.
 */
extern bool kp_parse_broker_id(const char *name, int32 *id);

extern int16 kp_broker_alter_configs(const char *resource_name, const KpBrokerConfigOp *ops, int n,
									 bool incremental, bool validate_only, char **msg);

/* The struct descriptor of a nested array field, by Kafka's field name. */
static inline const KpStructDesc *
child_desc(const KpStructDesc *parent, const char *field)
{
	int			i;

	for (i = 0; i < parent->nfields; i++)
		if (strcmp(parent->fields[i].name, field) == 0 && parent->fields[i].struct_desc)
			return parent->fields[i].struct_desc;
	elog(ERROR, "kafka_pg: %s has no struct field %s", parent->name, field);
	return NULL;				/* keep compiler quiet */
}

/* n elements of a response array, each with its defaults. */
static inline void *
new_array(const KpStructDesc *desc, int n)
{
	char	   *a = palloc(desc->size * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		kp_init_nested(desc, a + (size_t) i * desc->size);
	return a;
}

#define ArrayLen(n)		((n) < 0 ? 0 : (n))

static inline bool
uuid_is_zero(const KpUuid *u)
{
	int			i;

	for (i = 0; i < 16; i++)
		if (u->b[i] != 0)
			return false;
	return true;
}

/*
 * For each of names[0..n): does it occur elsewhere among them?  NULLs never
 * do.  A palloc'd bool[n]; sorts, O(n log n) (duplicates.c).
 *
 * With later non-NULL, *later gets a palloc'd bool[n] too: does the same
 * name occur before it?  Kafka's ControllerApis answers a name that a
 * CreateTopics, CreatePartitions or DeleteTopics request repeats once
 * ("Duplicate topic name."), not once per occurrence, and its group
 * coordinator a group DeleteGroups repeats: the later ones are dropped from
 * the response (kp_drop_entries).
 */
extern bool *kp_mark_duplicates(char *const *names, int n, bool **later);
extern int	kp_drop_entries(void *entries, size_t size, const bool *drop, int n);

/*
 * Drops the entries (each of size bytes) whose int32 element count at
 * count_offset is 0 or less (a null array), keeping the others' order;
 * returns how many are left.  Kafka's broker answers Produce, Fetch,
 * ListOffsets, DeleteRecords, OffsetCommit and TxnOffsetCommit by
 * partition: a topic listed with no partitions gets no entry.
 */
extern int	kp_drop_empty_entries(void *entries, size_t size, size_t count_offset, int n);
#define KP_DROP_EMPTY(array, n, type, count_field) \
	kp_drop_empty_entries((array), sizeof(type), offsetof(type, count_field), (n))

/*
 * The same sort, chaining each name's occurrences: a palloc'd int[n] whose
 * [i] is the next index holding names[i] (-1 after the last), and *later as
 * above.  kp_partition_keys chains a request's topics and partitions so.
 */
extern int *kp_chain_duplicates(char *const *names, int n, bool **later);

/*
 * The partitions of a request that lists topics (names[0..n), NULL never
 * repeats) and under each some partitions (counts[i] of them), numbered in
 * request order: partitions[] holds their indexes, topic i's from first[i]
 * to first[i + 1] - 1.  Kafka's broker keys ListOffsets and DeleteRecords
 * by partition, so a topic listed twice is one entry and a partition listed
 * twice one answer.  Sorts, O(n log n) (duplicates.c).
 */
typedef struct KpPartitionKeys
{
	int			n_keys;
	int		   *first;			/* [n + 1] */
	bool	   *later;			/* [n_keys]: listed before, the same topic */
	int		   *next;			/* [n_keys]: its next listing, -1 after the
								 * last */
	bool	   *topic_later;	/* [n]: the same name listed before */
	int		   *next_topic;		/* [n]: its next listing, -1 after the last */
} KpPartitionKeys;

#define KP_KEY_REPEATED(keys, k)	((keys)->later[k] || (keys)->next[k] >= 0)

extern void kp_partition_keys(char *const *names, const int *counts, int n,
							  const int32 *partitions, KpPartitionKeys *keys);

/*
 * Kafka's controller runs CreateTopics, DeleteTopics, CreatePartitions,
 * ElectLeaders and AlterPartitionReassignments against a deadline of the
 * request's arrival plus its timeout_ms.  One of 0 or less has passed before
 * the controller looks at the request: Kafka 4.4 answers every entry
 * REQUEST_TIMED_OUT with no message (and at the top, where the response has
 * an error code), whatever the entry, and does nothing.  So do these
 * handlers (test/clients/admin/wire_controller.py).
 */
#define KP_CONTROLLER_DEADLINE_PASSED(timeout_ms)	((timeout_ms) <= 0)

/*
 * Does names[i] occur among names[0..n) other than at i?  O(n): for a
 * handful of names; a request's names go through kp_mark_duplicates.
 */
static inline bool
is_duplicate(char *const *names, int n, int i)
{
	int			j;

	if (names[i] == NULL)
		return false;
	for (j = 0; j < n; j++)
		if (j != i && names[j] != NULL && strcmp(names[j], names[i]) == 0)
			return true;
	return false;
}

/* Raise the rollback that ends a successful validate_only operation. */
static inline void
rollback_validated(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_KP_VALIDATED),
			 errmsg("validated")));
}

#endif							/* KP_LISTENER_HANDLERS_ADMIN_H */
