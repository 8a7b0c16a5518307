/*-------------------------------------------------------------------------
 *
 * shim_alloc.c
 *	  Arena palloc/palloc0/repalloc/pfree for frontend builds (shim_alloc.h).
 *
 * test/protocol/shim_alloc.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

#include "shim_alloc.h"

/* Every chunk starts with this header; chunks form a doubly linked list. */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	max_align_t align[];
} Chunk;

static Chunk *chunks;
static size_t bytes_requested;

static void *
chunk_alloc(Size size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + (size ? size : 1));

	if (c == NULL)
	{
		fprintf(stderr, "shim_alloc: out of memory (%zu bytes)\n", (size_t) size);
		abort();
	}
	bytes_requested += size;
	c->prev = NULL;
	c->next = chunks;
	if (chunks)
		chunks->prev = c;
	chunks = c;
	return c->align;
}

static void
chunk_unlink(Chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void *
palloc(Size size)
{
	return chunk_alloc(size);
}

void *
palloc0(Size size)
{
	void	   *p = chunk_alloc(size);

	memset(p, 0, size);
	return p;
}

void *
palloc_extended(Size size, int flags)
{
	void	   *p = chunk_alloc(size);

	if (flags & MCXT_ALLOC_ZERO)
		memset(p, 0, size);
	return p;
}

void
pfree(void *pointer)
{
	Chunk	   *c = (Chunk *) ((char *) pointer - offsetof(Chunk, align));

	chunk_unlink(c);
	free(c);
}

void *
repalloc(void *pointer, Size size)
{
	Chunk	   *c = (Chunk *) ((char *) pointer - offsetof(Chunk, align));
	Chunk	   *n;

	chunk_unlink(c);
	n = realloc(c, sizeof(Chunk) + (size ? size : 1));
	if (n == NULL)
	{
		fprintf(stderr, "shim_alloc: out of memory (%zu bytes)\n", (size_t) size);
		abort();
	}
	bytes_requested += size;
	n->prev = NULL;
	n->next = chunks;
	if (chunks)
		chunks->prev = n;
	chunks = n;
	return n->align;
}

void
kp_arena_reset(void)
{
	while (chunks)
	{
		Chunk	   *next = chunks->next;

		free(chunks);
		chunks = next;
	}
	bytes_requested = 0;
}

size_t
kp_arena_bytes(void)
{
	return bytes_requested;
}
