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

/* Background worker entry point. */
extern PGDLLEXPORT void kp_resolver_main(Datum arg);

#endif							/* KP_TXN_H */
