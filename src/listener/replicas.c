/*-------------------------------------------------------------------------
 *
 * replicas.c
 *	  The replicas and in-sync replicas Metadata and DescribeTopicPartitions
 *	  report (docs/replication.md): this server, the leader, and the standbys
 *	  kafka.replica_nodes names, each with its node id.
 *
 * A standby cannot write the catalog, and its walsender on the primary
 * knows only its application_name, so the node ids of the standbys come
 * from a setting that every server of the cluster carries (a base backup
 * copies it), as Kafka's controller.quorum.voters lists the controllers:
 *
 *	 kafka.replica_nodes = 's1=1@db2.example:9092, s2=2@db3.example:9092'
 *
 * application_name=node_id@host:port per standby.  The replicas of every
 * partition are this server and every standby listed; the in-sync ones are
 * those PostgreSQL counts as synchronous now (src/store/isr.c); a listed
 * standby that is not streaming is an offline replica.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/xlog.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "listener/handlers.h"
#include "listener/listener.h"
#include "store/store.h"

char	   *kp_replica_nodes = NULL;
char	   *kp_broker_rack = NULL;

typedef struct ReplicaNode
{
	char		name[NAMEDATALEN];	/* the standby's application_name */
	int32		node_id;
	char		host[256];
	int			port;
	char		rack[64];		/* "" when the entry names none */
} ReplicaNode;

#define MAX_REPLICA_NODES 64

typedef struct ReplicaList
{
	int			n;
	ReplicaNode nodes[MAX_REPLICA_NODES];
} ReplicaList;

/*
 * Parse one "node_id@host:port[/rack]" lying between s and end, the form of a
 * kafka.replica_nodes entry after its "application_name=" and of the brokers
 * the primary publishes in kafka.leader.  NULL when it parses (host and rack
 * point into the string; *rack_len 0: no rack), else what is wrong with it.
 */
const char *
kp_parse_broker_entry(const char *s, const char *end, int32 *node_id,
					  const char **host, int *host_len, int32 *port,
					  const char **rack, int *rack_len)
{
	const char *at = memchr(s, '@', end - s);
	const char *slash = at ? memchr(at, '/', end - at) : NULL;
	const char *host_end = slash ? slash : end;
	const char *colon = NULL;
	const char *q;
	char	   *num_end;
	long		id;
	long		p;

	for (q = host_end - 1; at && q > at; q--)
		if (*q == ':')
		{
			colon = q;
			break;
		}
	if (at == NULL || colon == NULL || colon - at - 1 <= 0)
		return "is not node_id@host:port[/rack]";
	if (slash && end - slash - 1 <= 0)
		return "has an empty rack";
	errno = 0;
	id = strtol(s, &num_end, 10);
	if (num_end != at || s == at || errno != 0 || id < 0 || id > PG_INT32_MAX)
		return "has a bad node id";
	p = strtol(colon + 1, &num_end, 10);
	if (num_end != host_end || colon + 1 == host_end || p < 1 || p > 65535)
		return "has a bad port";
	*node_id = (int32) id;
	*host = at + 1;
	*host_len = colon - at - 1;
	*port = (int32) p;
	*rack = slash ? slash + 1 : NULL;
	*rack_len = slash ? end - slash - 1 : 0;
	return NULL;
}

/* Parse the setting; false with *why on a malformed entry. */
static bool
parse_replica_nodes(const char *value, ReplicaList *out, char **why)
{
	const char *p = value ? value : "";

	out->n = 0;
	for (;;)
	{
		const char *start;
		const char *eq;
		const char *end;
		const char *host;
		const char *rack;
		const char *bad;
		int			host_len;
		int			rack_len;
		int32		id;
		int32		port;
		ReplicaNode *rn;
		int			i;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			return true;
		start = p;
		while (*p && *p != ',')
			p++;
		end = p;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		eq = memchr(start, '=', end - start);
		if (eq == NULL || eq == start || eq - start >= NAMEDATALEN)
		{
			*why = psprintf("\"%.*s\" is not application_name=node_id@host:port[/rack]",
							(int) (end - start), start);
			return false;
		}
		bad = kp_parse_broker_entry(eq + 1, end, &id, &host, &host_len, &port, &rack, &rack_len);
		if (bad == NULL && host_len >= 256)
			bad = "has a host name of 256 bytes or more";
		if (bad == NULL && rack_len >= 64)
			bad = "has a rack name of 64 bytes or more";
		if (bad)
		{
			*why = psprintf("\"%.*s\" %s", (int) (end - start), start, bad);
			return false;
		}
		if (out->n == MAX_REPLICA_NODES)
		{
			*why = psprintf("at most %d standbys", MAX_REPLICA_NODES);
			return false;
		}
		rn = &out->nodes[out->n];
		memcpy(rn->name, start, eq - start);
		rn->name[eq - start] = '\0';
		rn->node_id = id;
		memcpy(rn->host, host, host_len);
		rn->host[host_len] = '\0';
		rn->port = port;
		memcpy(rn->rack, rack ? rack : "", rack_len);
		rn->rack[rack_len] = '\0';
		for (i = 0; i < out->n; i++)
			if (out->nodes[i].node_id == rn->node_id || strcmp(out->nodes[i].name, rn->name) == 0)
			{
				*why = psprintf("standby \"%s\" or node id %d listed twice", rn->name, rn->node_id);
				return false;
			}
		out->n++;
	}
}

static bool
check_replica_nodes(char **newval, void **extra, GucSource source)
{
	ReplicaList *list = malloc(sizeof(ReplicaList));
	char	   *why = NULL;
	MemoryContext cxt;
	MemoryContext old;
	bool		ok;

	if (list == NULL)
		return false;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "replica nodes", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	ok = parse_replica_nodes(*newval, list, &why);
	if (!ok)
		GUC_check_errdetail("%s", why);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	if (!ok)
	{
		free(list);
		return false;
	}
	*extra = list;
	return true;
}

static const ReplicaList *replica_list = NULL;

static void
assign_replica_nodes(const char *newval, void *extra)
{
	replica_list = extra;
}

void
kp_replicas_define_settings(void)
{
	DefineCustomStringVariable("kafka.broker_rack",
							   "This server's rack (Kafka's broker.rack): in Metadata, and for KIP-392 fetch from follower.",
							   "Set on the primary, a consumer whose client.rack differs is sent to a streaming standby of its rack.",
							   &kp_broker_rack, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.replica_nodes",
							   "The standbys that are Kafka replicas: application_name=node_id@host:port[/rack], comma-separated.",
							   "Metadata reports them as replicas of every partition, in sync while PostgreSQL counts them as synchronous.",
							   &kp_replica_nodes, "",
							   PGC_SIGHUP, 0,
							   check_replica_nodes, assign_replica_nodes, NULL);
}

/* the application_name of a walsender, from the backend status array */
static const char *
walsender_name(int pid)
{
	int			n = pgstat_fetch_stat_numbackends();
	int			i;

	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *be = pgstat_fetch_stat_local_beentry(i);

		if (be && be->backendStatus.st_procpid == pid)
			return be->backendStatus.st_appname;
	}
	return NULL;
}

static bool
listed_in(const ReplicaNode *rn, const KpIsrStandby *sb, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *name = walsender_name(sb[i].pid);

		if (name && strcmp(name, rn->name) == 0)
			return true;
	}
	return false;
}

int
kp_replication_factor(void)
{
	int			n = 1;
	int			i;

	for (i = 0; replica_list && i < replica_list->n; i++)
		if (replica_list->nodes[i].node_id != kp_node_id)
			n++;
	return n;
}

void
kp_replicas_now(KpReplicas *out)
{
	KpIsrStandby *sync = NULL;
	KpIsrStandby *streaming = NULL;
	int			nsync = 0;
	int			nstreaming = 0;
	int			required;
	int			nlisted = replica_list ? replica_list->n : 0;
	int			i;

	memset(out, 0, sizeof(*out));
	out->replicas = palloc(sizeof(int32) * (nlisted + 1));
	out->isr = palloc(sizeof(int32) * (nlisted + 1));
	out->offline = palloc(sizeof(int32) * Max(nlisted, 1));
	out->replicas[out->n_replicas++] = kp_node_id;
	out->isr[out->n_isr++] = kp_node_id;
	if (nlisted == 0)
		return;
	nsync = kp_isr_standbys(&sync, &required);
	nstreaming = kp_replica_standbys(&streaming);
	for (i = 0; i < nlisted; i++)
	{
		const ReplicaNode *rn = &replica_list->nodes[i];

		if (rn->node_id == kp_node_id)
			continue;			/* this server (a setting shared by all) */
		out->replicas[out->n_replicas++] = rn->node_id;
		if (listed_in(rn, sync, nsync))
			out->isr[out->n_isr++] = rn->node_id;
		else if (!listed_in(rn, streaming, nstreaming))
			out->offline[out->n_offline++] = rn->node_id;
	}
}

/*
 * The standbys of kafka.replica_nodes that stream now, with their
 * advertised listeners: the brokers besides this one that Metadata lists
 * (a standby's listener serves reads; one not streaming is likely down,
 * and a Kafka broker that stopped heartbeating is not listed either).
 */
int
kp_replica_brokers(KpBroker **out)
{
	KpIsrStandby *streaming = NULL;
	int			nstreaming;
	int			nlisted = replica_list ? replica_list->n : 0;
	int			n = 0;
	int			i;

	*out = palloc(sizeof(KpBroker) * Max(nlisted, 1));
	if (nlisted == 0 || RecoveryInProgress())
		return 0;
	nstreaming = kp_replica_standbys(&streaming);
	for (i = 0; i < nlisted; i++)
	{
		const ReplicaNode *rn = &replica_list->nodes[i];

		if (rn->node_id == kp_node_id || !listed_in(rn, streaming, nstreaming))
			continue;
		(*out)[n].node_id = rn->node_id;
		(*out)[n].host = pstrdup(rn->host);
		(*out)[n].port = rn->port;
		(*out)[n].rack = rn->rack[0] ? pstrdup(rn->rack) : NULL;
		n++;
	}
	return n;
}

/*
 * KIP-392: the replica a consumer of rack client_rack should fetch from,
 * or -1 (the leader).  As Kafka's RackAwareReplicaSelector: the leader when
 * it is in the consumer's rack (or either rack is unknown), else the
 * replica of that rack that is most caught up: here the listed standby of
 * that rack streaming now whose flushed WAL is furthest.  On the primary
 * only.
 */
int32
kp_preferred_read_replica(const char *client_rack)
{
	KpIsrStandby *streaming = NULL;
	int			nstreaming;
	int			nlisted = replica_list ? replica_list->n : 0;
	int32		best = -1;
	XLogRecPtr	best_flush = InvalidXLogRecPtr;
	int			i;
	int			j;

	if (client_rack == NULL || client_rack[0] == '\0' || kp_broker_rack == NULL ||
		kp_broker_rack[0] == '\0' || strcmp(client_rack, kp_broker_rack) == 0 ||
		nlisted == 0 || RecoveryInProgress())
		return -1;
	nstreaming = kp_replica_standbys(&streaming);
	for (i = 0; i < nlisted; i++)
	{
		const ReplicaNode *rn = &replica_list->nodes[i];

		if (rn->node_id == kp_node_id || strcmp(rn->rack, client_rack) != 0)
			continue;
		for (j = 0; j < nstreaming; j++)
		{
			const char *name = walsender_name(streaming[j].pid);

			if (name && strcmp(name, rn->name) == 0 &&
				(best < 0 || streaming[j].flush > best_flush))
			{
				best = rn->node_id;
				best_flush = streaming[j].flush;
			}
		}
	}
	return best;
}
