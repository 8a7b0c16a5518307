/*-------------------------------------------------------------------------
 *
 * assignor.h
 *	  Sets of topic partitions and the consumer protocol's server-side
 *	  assignors (KIP-848 "uniform" and "range"), as pure functions.
 *
 * Nothing here touches the catalog, shared memory or a global: the
 * functions take members and partitions and return a target assignment,
 * so test/unit/test_assignor.c runs them without a server.  They allocate
 * with palloc (the frontend one in the unit test).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_GROUP_ASSIGNOR_H
#define KP_GROUP_ASSIGNOR_H

/* A (topic, partition) and a set of them, kept sorted by topic then partition. */
typedef struct KpTP
{
	char	   *topic;
	int32		partition;
} KpTP;

typedef struct KpTPSet
{
	int			n;
	int			cap;
	KpTP	   *items;
} KpTPSet;

/* tpset.c */
extern bool kp_tps_contains(const KpTPSet *s, const char *topic, int32 partition);
extern void kp_tps_add(KpTPSet *s, const char *topic, int32 partition);
extern void kp_tps_remove(KpTPSet *s, const char *topic, int32 partition);
extern bool kp_tps_equal(const KpTPSet *a, const KpTPSet *b);
extern bool kp_tps_within(const KpTPSet *a, const KpTPSet *b);

/*
 * The catalog's text form, "topic:0,1|other:3" (kafka.group_members'
 * assigned, target, owned): the one parser and the one formatter of it.
 */
extern void kp_tps_parse(const char *str, KpTPSet *out);
extern char *kp_tps_format(const KpTPSet *s);

/* assignor.c */
typedef struct KpAssignMember
{
	int			nsubscribed;
	char	  **subscribed;		/* topic names */
	KpTPSet		target;			/* in: the previous target; out: the new one */
} KpAssignMember;

/*
 * uniform: every member gets an even share of the partitions of the topics
 * it subscribes to, keeping the partitions of its previous target that do
 * not have to move (sticky).  all: every partition of every subscribed
 * topic.
 */
extern void kp_assign_uniform(KpAssignMember *m, int n, const KpTPSet *all);

/* range: per topic, contiguous ranges of partitions in member order. */
extern void kp_assign_range(KpAssignMember *m, int n, const KpTPSet *all);

/* Does the member subscribe to topic? */
extern bool kp_assign_subscribes(const KpAssignMember *m, const char *topic);

#endif							/* KP_GROUP_ASSIGNOR_H */
