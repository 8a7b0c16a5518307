/*-------------------------------------------------------------------------
 *
 * throttle.c
 *	  Client quotas enforced: byte rates and request time per (user,
 *	  client-id), throttle times as Kafka's ClientQuotaManager computes
 *	  them, and the connection muted for that time (KIP-219).
 *
 * Four quota kinds, each resolved on its own: producer_byte_rate (the
 * bytes of Produce requests), consumer_byte_rate (the bytes of Fetch
 * responses), request_percentage (the time the listener spends on a
 * client's requests, as a percentage of one second per second; ApiVersions
 * and the SASL requests are exempt) and controller_mutation_rate
 * (partitions created or deleted per second, a token bucket: see
 * "controller_mutation_rate" below).
 *
 * Resolution is Kafka's DefaultQuotaCallback: for a connection of user U
 * (the principal, ANONYMOUS without authentication) and client id C, the
 * first of these entities with a quota of the kind applies, and the
 * "sensor" whose rate is measured is named by the tags in brackets:
 *
 *	 user=U client-id=C          (U, C)
 *	 user=U client-id=<default>  (U, C)
 *	 user=U                      (U, "")
 *	 user=<default> client-id=C  (U, C)
 *	 user=<default> client-id=<default>  (U, C)
 *	 user=<default>              (U, "")
 *	 client-id=C                 ("", C)
 *	 client-id=<default>         ("", C)
 *
 * so a quota on user=U is shared by all of U's clients, and a default
 * applies to each user (or client id) separately.  Sensors live in shared
 * memory: every listener worker's connections of one sensor count against
 * one quota, as on one Kafka broker.
 *
 * The rate is Kafka's Rate over a SampledStat of kafka.quota_window_num
 * samples of kafka.quota_window_size_seconds each (quota.window.num,
 * quota.window.size.seconds: 11 and 1): the sum of the live samples over
 * the time since the oldest began, that time taken as at least (num - 1)
 * windows.  After a request is recorded, a rate over the bound gives
 *
 *	 throttle_ms = (rate - bound) / bound * window_ms     (ClientQuotaManager.throttleTime)
 *
 * bounded by one window for request_percentage (ClientRequestQuotaManager).
 * A Fetch that earns a throttle time is answered without records and its
 * bytes are taken back (KafkaApis.handleFetchRequest: the client fetches
 * the same offsets again after the throttle time).  The response is sent
 * at once with throttle_time_ms set, and the
 * connection is then muted: no request of it is read or run until the
 * throttle time has passed (KIP-219; clients from 2.0 on also hold back
 * themselves).  A Fetch is also capped at bound * (num - 1) * window bytes
 * (getMaxValueInQuotaWindow), so one response cannot exceed what the
 * window allows.
 *
 * Cost: the quotas are kept in each worker's memory and reread only when
 * kafka.client_quotas changes (a relcache invalidation that its trigger
 * sends, src/catalog/quotas.c).  A connection keeps what it resolved until
 * the quotas or its client id change.  With no quota at all a request costs
 * one test; with one, a short exclusive hold of the sensor lock per kind.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "common/kafka_errors.h"
#include "listener/handlers.h"
#include "listener/listener_int.h"

/* settings */
int			kp_quota_window_num = 11;
int			kp_quota_window_size_seconds = 1;

#define KP_QUOTA_SENSORS		1024
#define KP_QUOTA_SAMPLES_MAX	32

typedef struct SensorKey
{
	int32		kind;			/* KpQuotaKind */
	char		user[NAMEDATALEN];	/* "" when not part of the tags */
	uint64		client_hash;	/* hash of the client-id tag ("" too) */
} SensorKey;

typedef struct Sensor
{
	SensorKey	key;
	int64		last_record_ms;
	int32		current;
	int64		start_ms[KP_QUOTA_SAMPLES_MAX]; /* -1: not yet used */
	double		value[KP_QUOTA_SAMPLES_MAX];
} Sensor;

typedef struct QuotaShared
{
	LWLock	   *lock;
} QuotaShared;

static QuotaShared *quota_shared = NULL;
static HTAB *sensors = NULL;
static bool table_full_logged = false;

/* this worker's copy of kafka.client_quotas */
static MemoryContext quota_cxt = NULL;
static KpClientQuota *quotas = NULL;
static int	nquotas = 0;
static bool quotas_valid = false;

/*
 * A read of the table began and did not end (a lock it may not wait for
 * under the request's lock_timeout, a cancel): read again.  Until
 * 2026-12-07 such a read left the worker with no quotas, "loaded", until the
 * table next changed.
 */
static bool quotas_reading = false;
static Oid	quotas_relid = InvalidOid;
static uint64 quotas_generation = 1;

static const char *const kind_keys[KP_QUOTA_KINDS] = {
	"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"
};

static void
quota_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == quotas_relid)
		quotas_valid = false;
}

void
kp_quota_init(void)
{
	DefineCustomIntVariable("kafka.quota_window_num",
							"Samples the client quota rates are measured over (Kafka's quota.window.num).",
							NULL,
							&kp_quota_window_num, 11, 2, KP_QUOTA_SAMPLES_MAX,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.quota_window_size_seconds",
							"Length of one client quota sample (Kafka's quota.window.size.seconds).",
							NULL,
							&kp_quota_window_size_seconds, 1, 1, 3600,
							PGC_POSTMASTER, GUC_UNIT_S, NULL, NULL, NULL);
}

Size
kp_quota_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(QuotaShared)),
					hash_estimate_size(KP_QUOTA_SENSORS, sizeof(Sensor)));
}

void
kp_quota_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg client quotas", 1);
}

/* Called with AddinShmemInitLock held. */
void
kp_quota_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	quota_shared = ShmemInitStruct("kafka_pg client quotas", sizeof(QuotaShared), &found);
	if (!found)
		quota_shared->lock = &(GetNamedLWLockTranche("kafka_pg client quotas"))->lock;
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(SensorKey);
	info.entrysize = sizeof(Sensor);
	sensors = ShmemInitHash("kafka_pg client quota sensors",
							KP_QUOTA_SENSORS, KP_QUOTA_SENSORS, &info,
							HASH_ELEM | HASH_BLOBS);
}

/* Reread kafka.client_quotas if it changed (inside a transaction). */
static void
quotas_load(void)
{
	MemoryContext old;

	if (quotas_valid && !quotas_reading)
		return;
	if (quota_cxt == NULL)
	{
		quota_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg client quotas",
										  ALLOCSET_SMALL_SIZES);
		CacheRegisterRelcacheCallback(quota_relcache_callback, (Datum) 0);
	}
	MemoryContextReset(quota_cxt);
	quotas = NULL;
	nquotas = 0;
	quotas_relid = kp_client_quotas_relid();

	/*
	 * No table (the extension is not created yet): look again next time, as
	 * its creation invalidates a relation we could not name.  Otherwise an
	 * invalidation while reading clears this.
	 */
	quotas_valid = OidIsValid(quotas_relid);
	if (OidIsValid(quotas_relid))
	{
		old = MemoryContextSwitchTo(quota_cxt);
		quotas_reading = true;
		nquotas = kp_client_quotas(&quotas);
		quotas_reading = false;
		MemoryContextSwitchTo(old);
	}
	quotas_generation++;
}

/* The quota of kind at one entity, or false. */
static bool
find_quota(int kind, bool has_user, const char *user, bool has_client, const char *client,
		   double *value)
{
	int			i;

	for (i = 0; i < nquotas; i++)
	{
		const KpQuotaEntity *e = &quotas[i].entity;

		if (e->has_user != has_user || e->has_client_id != has_client ||
			strcmp(quotas[i].key, kind_keys[kind]) != 0)
			continue;
		if (has_user && ((user == NULL) != (e->user == NULL) ||
						 (user && strcmp(user, e->user) != 0)))
			continue;
		if (has_client && ((client == NULL) != (e->client_id == NULL) ||
						   (client && strcmp(client, e->client_id) != 0)))
			continue;
		*value = quotas[i].value;
		return true;
	}
	return false;
}

static uint64
client_hash(const char *client_id)
{
	return hash_bytes_extended((const unsigned char *) client_id, strlen(client_id), 0);
}

/* DefaultQuotaCallback: the bound and sensor of one kind for (user, client). */
static void
resolve_kind(KpQuotaState *st, int kind, const char *user, const char *client)
{
	static const struct
	{
		bool		has_user;
		bool		user_default;
		bool		has_client;
		bool		client_default;
		bool		tag_user;
		bool		tag_client;
	}			order[8] = {
		{true, false, true, false, true, true},
		{true, false, true, true, true, true},
		{true, false, false, false, true, false},
		{true, true, true, false, true, true},
		{true, true, true, true, true, true},
		{true, true, false, false, true, false},
		{false, false, true, false, false, true},
		{false, false, true, true, false, true},
	};
	int			i;

	st->bound[kind] = 0;
	for (i = 0; i < 8; i++)
	{
		double		v;

		if (find_quota(kind, order[i].has_user, order[i].user_default ? NULL : user,
					   order[i].has_client, order[i].client_default ? NULL : client, &v))
		{
			st->bound[kind] = v;
			strlcpy(st->tag_user[kind], order[i].tag_user ? user : "", NAMEDATALEN);
			st->tag_client_hash[kind] = client_hash(order[i].tag_client ? client : "");
			return;
		}
	}
}

/*
 * Before a request runs (in its transaction): what quotas apply to the
 * connection now.  Returns the most bytes a Fetch may answer with under
 * its consumer_byte_rate, or -1 for no such cap.
 */
int64
kp_quota_prepare(KpConn *c, const char *client_id)
{
	KpQuotaState *st = &c->quota;
	uint64		ch;
	int			k;

	quotas_load();
	if (nquotas == 0)
	{
		st->active = false;
		return -1;
	}
	if (client_id == NULL)
		client_id = "";
	ch = client_hash(client_id);
	if (st->generation != quotas_generation || st->client_hash != ch)
	{
		st->generation = quotas_generation;
		st->client_hash = ch;
		st->active = false;
		for (k = 0; k < KP_QUOTA_KINDS; k++)
		{
			resolve_kind(st, k, c->principal, client_id);
			if (st->bound[k] > 0)
				st->active = true;
		}
	}
	if (st->active && st->bound[KP_QUOTA_CONSUME] > 0)
		return (int64) Min(st->bound[KP_QUOTA_CONSUME] * (kp_quota_window_num - 1) *
						   kp_quota_window_size_seconds, (double) PG_INT32_MAX);
	return -1;
}

/* Kafka's Rate.windowSize over the live samples (purging the stale ones). */
static int64
window_ms(Sensor *s, int64 now, double *total)
{
	int64		win = (int64) kp_quota_window_size_seconds * 1000;
	int64		oldest = now;
	int64		elapsed;
	int64		full;
	int			i;

	*total = 0;
	for (i = 0; i < kp_quota_window_num; i++)
	{
		if (s->start_ms[i] < 0)
			continue;
		if (now - s->start_ms[i] >= win * kp_quota_window_num)
		{
			s->start_ms[i] = now;	/* purgeObsoleteSamples: reset */
			s->value[i] = 0;
		}
		if (s->start_ms[i] < oldest)
			oldest = s->start_ms[i];
		*total += s->value[i];
	}
	elapsed = now - oldest;
	full = elapsed / win;
	if (full < kp_quota_window_num - 1)
		elapsed += (kp_quota_window_num - 1 - full) * win;
	return elapsed;
}

static Sensor *
sensor_for(const SensorKey *key, int64 now, bool *isnew)
{
	bool		found;
	Sensor	   *s = hash_search(sensors, key, HASH_ENTER_NULL, &found);

	if (s == NULL)
	{
		/* full: forget sensors whose every sample is stale, and try again */
		HASH_SEQ_STATUS seq;
		Sensor	   *e;
		int64		stale = now - (int64) kp_quota_window_size_seconds * 1000 * kp_quota_window_num;

		hash_seq_init(&seq, sensors);
		while ((e = hash_seq_search(&seq)) != NULL)
			if (e->last_record_ms < stale)
				hash_search(sensors, &e->key, HASH_REMOVE, NULL);
		s = hash_search(sensors, key, HASH_ENTER_NULL, &found);
		if (s == NULL)
			return NULL;
	}
	if (!found)
	{
		int			i;

		for (i = 0; i < KP_QUOTA_SAMPLES_MAX; i++)
		{
			s->start_ms[i] = -1;
			s->value[i] = 0;
		}
		s->current = 0;
		s->start_ms[0] = now;
	}
	if (isnew)
		*isnew = !found;
	return s;
}

/*
 * Record value on one kind's sensor; the throttle time it earns, in ms
 * (check false: none, as Kafka's unrecord).
 */
static int64
record(KpConn *c, int kind, double value, int64 now, bool check)
{
	KpQuotaState *st = &c->quota;
	SensorKey	key;
	Sensor	   *s;
	int64		win = (int64) kp_quota_window_size_seconds * 1000;
	int64		size_ms;
	double		total;
	double		rate;
	double		bound = st->bound[kind];
	int64		throttle = 0;

	if (bound <= 0)
		return 0;
	memset(&key, 0, sizeof(key));
	key.kind = kind;
	strlcpy(key.user, st->tag_user[kind], NAMEDATALEN);
	key.client_hash = st->tag_client_hash[kind];

	LWLockAcquire(quota_shared->lock, LW_EXCLUSIVE);
	s = sensor_for(&key, now, NULL);
	if (s == NULL)
	{
		LWLockRelease(quota_shared->lock);
		if (!table_full_logged)
			ereport(LOG,
					(errmsg("kafka_pg listener: more than %d client quota sensors are active: the quota of %s is not applied",
							KP_QUOTA_SENSORS, c->peer)));
		table_full_logged = true;
		return 0;
	}
	/* SampledStat.record: a new sample once the current one is a window old */
	if (now - s->start_ms[s->current] >= win)
	{
		s->current = (s->current + 1) % kp_quota_window_num;
		s->start_ms[s->current] = now;
		s->value[s->current] = 0;
	}
	s->value[s->current] += value;
	s->last_record_ms = now;
	size_ms = window_ms(s, now, &total);
	LWLockRelease(quota_shared->lock);

	rate = total / ((double) size_ms / 1000.0);
	if (check && rate > bound)
		throttle = (int64) llround((rate - bound) / bound * (double) size_ms);
	if (kind == KP_QUOTA_REQUEST)
		throttle = Min(throttle, win);
	return throttle;
}

/*
 * After a request ran: record what it cost on the connection's sensors and
 * return the throttle time it earns (0 if none).  produce_bytes: the size
 * of a Produce request; fetch_bytes: of a Fetch response (else 0);
 * request_ms: the time spent on it; exempt: not counted against
 * request_percentage.
 */
int64
kp_quota_record(KpConn *c, double produce_bytes, double fetch_bytes, double request_ms,
				bool exempt, int64 now)
{
	int64		throttle = 0;
	int64		t;

	/* (record is called once per kind: Max() would evaluate it twice) */
	if (!c->quota.active)
		return 0;
	if (produce_bytes > 0)
	{
		t = record(c, KP_QUOTA_PRODUCE, produce_bytes, now, true);
		throttle = Max(throttle, t);
	}
	if (fetch_bytes > 0)
	{
		t = record(c, KP_QUOTA_CONSUME, fetch_bytes, now, true);
		throttle = Max(throttle, t);
	}
	if (!exempt && request_ms > 0)
	{
		/* a percentage of one second per second: ms * 100 / 1000 */
		t = record(c, KP_QUOTA_REQUEST, request_ms / 10.0, now, true);
		throttle = Max(throttle, t);
	}
	return Min(throttle, (int64) PG_INT32_MAX);
}

/*
 * A throttled Fetch is answered without records (KafkaApis): take back the
 * bytes kp_quota_record counted for the response it will not send.
 */
void
kp_quota_unrecord_fetch(KpConn *c, double fetch_bytes, int64 now)
{
	if (c->quota.active && fetch_bytes > 0)
		(void) record(c, KP_QUOTA_CONSUME, -fetch_bytes, now, false);
}

/* ---------------------------------------------------------------------
 * controller_mutation_rate (KIP-599)
 *
 * Kafka's ControllerMutationQuotaManager: a TokenBucket per sensor (the same
 * user / client-id resolution as the other kinds), holding at most
 * bound * quota.window.num * quota.window.size.seconds tokens (the burst),
 * refilled at bound tokens per second, one token per partition created or
 * deleted (CreateTopics: the topic's partitions; CreatePartitions: the new
 * ones; DeleteTopics: the topic's partitions).  Requests at the versions
 * since KIP-599 (CreateTopics >= 6, CreatePartitions >= 3, DeleteTopics
 * >= 5) are strict: a topic asked for while the bucket is below zero gets
 * THROTTLING_QUOTA_EXCEEDED and the response the time until the bucket is
 * back at zero, -tokens / bound seconds; a topic asked for with tokens
 * left goes ahead whole, even if that takes the bucket below zero (a burst).
 * Older versions are permissive: everything goes ahead and the response
 * carries the throttle time the mutations earned.  Either way the
 * connection is then muted for that time (dispatch.c), as for the other
 * kinds.  The bucket is the sensor's value[0], its last refill start_ms[0].
 * ---------------------------------------------------------------------
 */

/* The bucket's tokens now (refilled), under the quota lock. */
static double
bucket_refill(Sensor *s, double bound, bool isnew, int64 now)
{
	double		burst = bound * kp_quota_window_num * kp_quota_window_size_seconds;

	if (isnew)
		s->value[0] = burst;	/* Kafka's starts full */
	else
		s->value[0] = Min(burst, s->value[0] + bound * (double) (now - s->start_ms[0]) / 1000.0);
	s->start_ms[0] = now;
	s->last_record_ms = now;
	return s->value[0];
}

/*
 * Take partitions from the connection's bucket (0: only look); returns
 * false when it has no controller_mutation_rate (or no sensor could be
 * had), else the tokens left in *tokens.
 */
static bool
bucket_take(KpConn *c, double partitions, double *tokens)
{
	KpQuotaState *st = &c->quota;
	double		bound = st->bound[KP_QUOTA_MUTATION];
	int64		now = kp_listener_now_ms();
	SensorKey	key;
	Sensor	   *s;
	bool		isnew;

	if (!st->active || bound <= 0)
		return false;
	memset(&key, 0, sizeof(key));
	key.kind = KP_QUOTA_MUTATION;
	strlcpy(key.user, st->tag_user[KP_QUOTA_MUTATION], NAMEDATALEN);
	key.client_hash = st->tag_client_hash[KP_QUOTA_MUTATION];
	LWLockAcquire(quota_shared->lock, LW_EXCLUSIVE);
	s = sensor_for(&key, now, &isnew);
	if (s == NULL)
	{
		LWLockRelease(quota_shared->lock);
		return false;
	}
	*tokens = bucket_refill(s, bound, isnew, now);
	if (partitions > 0)
	{
		double		burst = bound * kp_quota_window_num * kp_quota_window_size_seconds;

		s->value[0] = Min(burst, s->value[0] - partitions);
		*tokens = s->value[0];
	}
	LWLockRelease(quota_shared->lock);
	return true;
}

/* The throttle time of a bucket at tokens (< 0): until it is back at zero. */
static int64
bucket_throttle_ms(KpConn *c, double tokens)
{
	double		ms = -tokens / c->quota.bound[KP_QUOTA_MUTATION] * 1000.0;

	return tokens < 0 ? (int64) Min(llround(ms), (double) PG_INT32_MAX) : 0;
}

bool
kp_quota_mutation_refused(KpRequestContext *ctx)
{
	double		tokens;

	if (!bucket_take(ctx->conn, 0, &tokens) || tokens >= 0)
		return false;
	ctx->mutation_throttle_ms = Max(ctx->mutation_throttle_ms,
									bucket_throttle_ms(ctx->conn, tokens));
	return true;
}

void
kp_quota_mutation_record(KpRequestContext *ctx, double partitions, bool strict)
{
	double		tokens;

	if (partitions <= 0 || !bucket_take(ctx->conn, partitions, &tokens))
		return;
	/* strict: a mutation that went ahead earns no throttle time itself */
	if (!strict && tokens < 0)
		ctx->mutation_throttle_ms = Max(ctx->mutation_throttle_ms,
										bucket_throttle_ms(ctx->conn, tokens));
}

/*
 * Set the response's ThrottleTimeMs (every response of the APIs served has
 * one at the top level, at most versions); false if this one has none.
 */
bool
kp_quota_set_throttle(const KpApiEntry *api, int version, void *response, int32 throttle_ms)
{
	const KpStructDesc *root = api->response->root;
	int			i;

	for (i = 0; i < root->nfields; i++)
	{
		const KpFieldDesc *f = &root->fields[i];

		if (f->type == KP_T_INT32 && !(f->flags & KP_F_ARRAY) &&
			strcmp(f->name, "ThrottleTimeMs") == 0)
		{
			if (!KP_VERSION_IN(f->versions, version))
				return false;
			*(int32 *) ((char *) response + f->offset) = throttle_ms;
			return true;
		}
	}
	return false;
}
