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

/* Kafka timestamps (ms since the Unix epoch) <-> timestamptz */
#define KP_UNIX_EPOCH_OFFSET_MS \
	(((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000)
#define KpMsToTimestampTz(ms)	((TimestampTz) (((ms) - KP_UNIX_EPOCH_OFFSET_MS) * 1000))
#define KpTimestampTzToMs(ts)	((int64) ((ts) / 1000) + KP_UNIX_EPOCH_OFFSET_MS)

#endif							/* KP_SQLAPI_H */
