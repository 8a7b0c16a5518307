/*-------------------------------------------------------------------------
 *
 * txn.h
 *	  The transaction coordinator: the whole public face of src/txn.
 *
 * For now it owns the mapping of SQL transactions onto Kafka transactions
 * (docs/transactions.md): every batch a SQL (sub)transaction produces is a
 * transactional batch whose producer id is derived from its transaction id;
 * the commit log decides its fate, and the resolver background worker
 * writes the COMMIT/ABORT markers after the outcome is known.  Readers go
 * by the markers (the store's aborted-transaction index) and ask the
 * commit log, through the callback kp_txn_init registers with the store,
 * only about a transaction that has none yet.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_TXN_H
#define KP_TXN_H

#include "postgres.h"

/* Called from _PG_init: registers the transaction callbacks. */
extern void kp_txn_init(void);

/* Producer id of the current (sub)transaction; assigns it an xid. */
extern int64 kp_txn_sql_producer_id(void);

/* Note that the current subtransaction wrote to the partition. */
extern void kp_txn_note_write(int64 partition_id, int64 producer_id);

/* ---------- the transaction coordinator of wire producers (coordinator.c) ---------- */

/*
 * Every function returns a Kafka error code (KP_ERR_*) and runs in the
 * caller's transaction.  PRODUCER_FENCED is returned whatever the request
 * version; callers answer INVALID_PRODUCER_EPOCH where the version predates
 * it.  *complete = true means a transaction was decided: commit the
 * caller's transaction, then call kp_txn_complete in a new one to write its
 * markers (the resolver's upkeep does it otherwise).
 */
struct KpTxnRow;
struct KpTxnPartition;
struct KpTxnOffset;

extern int	kp_transaction_max_timeout_ms;

/*
 * The transaction.version feature ApiVersions finalizes: 2, KIP-890 part 2
 * (the epoch bumped at every EndTxn v5+, partitions and groups added by
 * Produce v12+ and TxnOffsetCommit v5+ themselves).
 */
#define KP_TRANSACTION_VERSION_FEATURE	"transaction.version"
#define KP_TRANSACTION_VERSION			2

extern int16 kp_txn_init_producer(const char *transactional_id, int32 timeout_ms,
								  int64 expected_producer_id, int16 expected_epoch,
								  int64 *producer_id, int16 *producer_epoch, bool *complete);
extern int16 kp_txn_add_partitions(const char *transactional_id, int64 producer_id,
								   int16 producer_epoch, int n,
								   const struct KpTxnPartition *partitions, bool verify_only,
								   int16 *partition_errors);
extern int16 kp_txn_add_offsets(const char *transactional_id, int64 producer_id,
								int16 producer_epoch, const char *group_id);
extern int16 kp_txn_offset_commit(const char *transactional_id, int64 producer_id,
								  int16 producer_epoch, const char *group_id,
								  const char *member_id, const char *group_instance_id,
								  int32 generation_id, bool add_group, int n,
								  const struct KpTxnOffset *offsets);
extern int16 kp_txn_end(const char *transactional_id, int64 producer_id, int16 producer_epoch,
						bool commit, bool version2, bool *complete, int64 *next_producer_id,
						int16 *next_epoch);
extern void kp_txn_complete(const char *transactional_id);

/*
 * Produce: may this transactional batch be appended to the partition?
 * add_for: the request's transactional id when the request may add the
 * partition to the transaction itself (transactions version 2), else NULL;
 * *added (if added is not NULL): it did (the caller commits that before
 * appending).
 */
extern int16 kp_txn_check_produce(int64 producer_id, int16 producer_epoch, int64 partition_id,
								  const char *add_for, const char *topic, int32 partition,
								  bool *added);

/* OffsetFetch require_stable: offsets of an undecided transaction pending? */
extern bool kp_txn_offsets_pending(const char *group_id, const char *topic, int32 partition);

/* DescribeTransactions, ListTransactions */
extern bool kp_txn_describe(const char *transactional_id, struct KpTxnRow *row,
							int *npartitions, struct KpTxnPartition **partitions,
							int *ngroups, char ***groups);
extern int	kp_txn_list(struct KpTxnRow **rows);

/* The resolver's upkeep: complete decided transactions, time out old ones. */
extern void kp_txn_upkeep(void);

extern void kp_txn_coordinator_init_gucs(void);

/* Background worker entry point. */
extern PGDLLEXPORT void kp_resolver_main(Datum arg);

#endif							/* KP_TXN_H */
