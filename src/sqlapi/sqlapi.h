/*-------------------------------------------------------------------------
 *
 * sqlapi.h
 *	  Helpers shared by the SQL front door's files (src/sqlapi only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SQLAPI_H
#define KP_SQLAPI_H

#include "fmgr.h"
#include "datatype/timestamp.h"
#include "utils/array.h"

#include "codec/codec.h"
#include "store/store.h"

/* A text argument as a C string; ERROR naming the argument if it is null. */
extern char *kp_arg_text(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * acls.c: once a function's ACL check has passed, its catalog and store
 * work runs with the extension's rights (the bootstrap superuser, who owns
 * the superuser-only extension), as the listener's does: the ACL is the one
 * check, on both front doors.  kp_sql_as_caller goes back before the
 * function returns; an ERROR goes back by itself (the (sub)transaction's
 * abort restores the user).
 */
typedef struct KpSqlOwner
{
	Oid			caller;
	int			sec_context;
	bool		active;
} KpSqlOwner;

extern void kp_sql_as_owner(KpSqlOwner *o);
extern void kp_sql_as_caller(KpSqlOwner *o);

/* read_committed -> true, read_uncommitted -> false, else ERROR */
extern bool kp_parse_isolation(const char *s);

struct ReturnSetInfo;
struct KpTopic;
struct KpRecord;

/* largest batch we inflate for SQL (a compressed batch may expand a lot) */
#define KP_SQL_MAX_INFLATE	((size_t) 256 * 1024 * 1024)

/* fetch.c: how a key or value column shows the record's bytes */
typedef enum KpOutForm
{
	KP_OUT_BYTEA,
	KP_OUT_TEXT,
	KP_OUT_JSONB
} KpOutForm;

/* bytea -> bytea, jsonb -> jsonb, anything else text */
extern KpOutForm kp_sql_out_form(Oid typid);

/*
 * Record bytes as a datum of that form; text and jsonb are checked (ERROR
 * 22021 or jsonb's own naming what and the record's offset).
 */
extern Datum kp_sql_bytes_datum(const char *data, int len, KpOutForm form,
								int64 offset, const char *what);

/* A record's headers as kafka.header[] (keys must be valid text). */
extern Datum kp_sql_headers_datum(const struct KpRecord *rec, Oid header_type);

/* fetch.c: records of one partition into a materialized SRF result */
extern int	kp_sql_emit_records(struct ReturnSetInfo *rsinfo, const struct KpTopic *topic,
								int32 partition, int64 from_offset, int max_records,
								bool read_committed, int64 *position);

/*
 * produce.c: what every SQL producer shares (produce, produce_batch, and
 * bulk.c's streaming producer behind produce_agg and the foreign tables).
 */
extern void kp_sql_check_not_in_recovery(void);
extern int32 kp_sql_round_robin(int32 partitions);
extern KpCompression kp_sql_topic_compression(const struct KpTopic *topic);
extern KpHeader *kp_sql_headers_from_array(ArrayType *arr, int *nheaders);
extern void kp_sql_append_batch(const struct KpTopic *topic, int32 partition, char *batch,
								size_t len, int64 producer_id, KpAppendResult *res);

/*
 * bulk.c: a streaming producer (produce_batch, produce_agg, the foreign
 * tables).  Records are added one at a time and go
 * into one open record batch per partition (up to the topic's
 * max.message.bytes); a full batch, or the largest memory use allowed
 * (work_mem, at least 1 MB, over all open batches), appends a batch at
 * once through kp_sql_append_batch, so memory stays bounded whatever the
 * number of records.  kp_bulk_finish appends what is left.  Every batch
 * belongs to the calling (sub)transaction, as kafka.produce's do.
 */
typedef struct KpBulkProducer KpBulkProducer;
typedef struct KpBulkTopic KpBulkTopic;

/* A producer living in a child of CurrentMemoryContext. */
extern KpBulkProducer *kp_bulk_begin(void);

/*
 * The topic to add records to: WRITE checked for current_user (42501) and
 * the topic opened the first time a name is seen by this producer.
 */
extern KpBulkTopic *kp_bulk_topic(KpBulkProducer *bp, const char *name, int name_len);
extern const struct KpTopic *kp_bulk_topic_info(KpBulkTopic *bt);

/*
 * Add a record (key/value NULL: null); has_partition: to that partition
 * (KP003 when out of range), else by key (murmur2) or sticky round-robin;
 * has_timestamp: with that CreateTime (checked against the topic's
 * bounds, KP032), else now.  Returns the partition chosen.
 */
extern int32 kp_bulk_add(KpBulkProducer *bp, KpBulkTopic *bt,
						 const char *key, int key_len, const char *value, int value_len,
						 const KpHeader *headers, int nheaders,
						 bool has_partition, int32 partition,
						 bool has_timestamp, int64 timestamp_ms);

/* Append the open batch of one partition now; its base offset, -1 if none. */
extern int64 kp_bulk_flush_partition(KpBulkProducer *bp, KpBulkTopic *bt, int32 partition);

/* The last offset of the last batch appended to the partition; -1: none. */
extern int64 kp_bulk_last_offset(KpBulkTopic *bt, int32 partition);

/* Append every open batch; returns the records added since kp_bulk_begin. */
extern int64 kp_bulk_finish(KpBulkProducer *bp);

/* Called after each batch appended (produce_batch's result rows). */
typedef void (*KpBulkAppendCallback) (void *arg, int32 partition, int64 base_offset,
									  int32 record_count);
extern void kp_bulk_set_append_callback(KpBulkProducer *bp, KpBulkAppendCallback cb,
										void *arg);

/* The producer's "now" (ms), the timestamp of records added without one. */
extern int64 kp_bulk_now_ms(KpBulkProducer *bp);

/* Kafka timestamps (ms since the Unix epoch) <-> timestamptz */
#define KP_UNIX_EPOCH_OFFSET_MS \
	(((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000)
#define KpMsToTimestampTz(ms)	((TimestampTz) (((ms) - KP_UNIX_EPOCH_OFFSET_MS) * 1000))
#define KpTimestampTzToMs(ts)	((int64) ((ts) / 1000) + KP_UNIX_EPOCH_OFFSET_MS)

#endif							/* KP_SQLAPI_H */
