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

/* How a key or value column holds a record's bytes (both directions) */
typedef enum KpOutForm
{
	KP_OUT_BYTEA,
	KP_OUT_TEXT,
	KP_OUT_JSONB
} KpOutForm;

/* bytea -> bytea, jsonb -> jsonb, anything else text */
extern KpOutForm kp_sql_out_form(Oid typid);

/*
 * fetch.c: record bytes as a datum of that form; text and jsonb are checked
 * (ERROR 22021 or jsonb's own naming what and the record's offset).
 */
extern Datum kp_sql_bytes_datum(const char *data, int len, KpOutForm form,
								int64 offset, const char *what);

/*
 * produce.c: the other way, the bytes a producer sends for a non-null key
 * or value datum of that form: a bytea's or text's bytes as they are
 * (detoasted, not copied), a jsonb as its text.  Every SQL producer
 * (produce, produce_batch, produce_agg, the foreign tables) goes through it.
 */
extern const char *kp_sql_datum_bytes(Datum d, KpOutForm form, int *len);

/* A record's headers as kafka.header[] (keys must be valid text). */
extern Datum kp_sql_headers_datum(const struct KpRecord *rec, Oid header_type);

/*
 * fetch.c: a record as a row of kafka.fetch's columns, in this order; the
 * foreign tables (fdw.c) pick theirs by name among the same.
 */
typedef enum KpRecordCol
{
	KP_COL_PARTITION,
	KP_COL_OFFSET,
	KP_COL_TIMESTAMP,
	KP_COL_KEY,
	KP_COL_VALUE,
	KP_COL_HEADERS,
	KP_NCOLS
} KpRecordCol;

typedef struct KpRecordRow
{
	bool		need[KP_NCOLS]; /* columns to build; the others are null */
	KpOutForm	key_form;
	KpOutForm	value_form;
	Oid			header_type;	/* kafka.header */
	Datum		no_headers;		/* the empty kafka.header[], built once */
} KpRecordRow;

/* Every column needed; header_type InvalidOid: no headers column. */
extern void kp_sql_record_row_init(KpRecordRow *rr, KpOutForm key_form, KpOutForm value_form,
								   Oid header_type);

/*
 * The row of record rec of partition, from the batch whose header is hdr
 * (LogAppendTime: its max timestamp is every record's), into
 * values/nulls[KP_NCOLS], allocated in the current memory context.
 */
extern void kp_sql_record_row(const KpRecordRow *rr, int32 partition,
							  const struct KpBatchHeader *hdr, const struct KpRecord *rec,
							  Datum *values, bool *nulls);

/*
 * fetch.c: the record iterator for SQL's readers (fetch, table, the foreign
 * scan), inflating up to KP_SQL_MAX_INFLATE: a batch or record that cannot
 * be decoded is ERROR KP002 naming the partition and topic.  next returns
 * false at the end of the batch.
 */
extern void kp_sql_record_iter_begin(KpRecordIter *it, const char *batch, size_t len,
									 const struct KpTopic *topic, int32 partition);
extern bool kp_sql_record_iter_next(KpRecordIter *it, KpRecord *rec,
									const struct KpTopic *topic, int32 partition);

/* fetch.c: records of one partition into a materialized SRF result */
extern int	kp_sql_emit_records(struct ReturnSetInfo *rsinfo, const struct KpTopic *topic,
								int32 partition, int64 from_offset, int max_records,
								bool read_committed, int64 *position);

/*
 * produce.c: what every SQL producer shares (produce, produce_batch, and
 * bulk.c's streaming producer behind produce_agg and the foreign tables).
 */
extern void kp_sql_check_writable(const char *cmdname);
extern void kp_sql_check_writable_fn(FunctionCallInfo fcinfo);
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

/*
 * A producer living in a child of CurrentMemoryContext; refuses first, as
 * kp_sql_check_writable(cmdname), on a standby or in a read-only transaction.
 */
extern KpBulkProducer *kp_bulk_begin(const char *cmdname);

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
