/*-------------------------------------------------------------------------
 *
 * postgres.h (shim)
 *	  Lets src/codec build as frontend code, outside a backend.
 *
 * The codec includes "postgres.h" like any backend file.  The unit test and
 * the fuzzer put this directory first on the include path, so they get the
 * frontend environment instead: c.h plus fe_memutils' palloc/pfree (backed
 * by malloc), with StringInfo from libpgcommon.a and pg_crc32c from
 * libpgport.a.  The codec uses nothing else from the backend (no elog, no
 * memory contexts), which is what keeps this shim this small.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SHIM_POSTGRES_H
#define KP_SHIM_POSTGRES_H

#ifndef FRONTEND
#define FRONTEND 1
#endif
#include "postgres_fe.h"

#endif							/* KP_SHIM_POSTGRES_H */
