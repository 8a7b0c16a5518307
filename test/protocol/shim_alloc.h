/*-------------------------------------------------------------------------
 *
 * shim_alloc.h
 *	  An arena palloc for frontend builds of src/protocol (test and fuzzer).
 *
 * The codec pallocs and never frees: in the backend a per-request memory
 * context does that.  Frontend builds link shim_alloc.c, whose palloc family
 * keeps every chunk on a list that kp_arena_reset() frees at once, and counts
 * the bytes asked for, so a test can prove a hostile length allocated
 * nothing.  It replaces libpgcommon's fe_memutils palloc (the linker takes
 * these definitions first and never pulls fe_memutils.o).
 *
 * test/protocol/shim_alloc.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SHIM_ALLOC_H
#define KP_SHIM_ALLOC_H

#include <stddef.h>

/* Free everything allocated since the last reset; zero the counters. */
extern void kp_arena_reset(void);

/* Bytes requested since the last reset (palloc, palloc0, repalloc sizes). */
extern size_t kp_arena_bytes(void);

#endif							/* KP_SHIM_ALLOC_H */
