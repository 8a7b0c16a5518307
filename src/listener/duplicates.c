/*-------------------------------------------------------------------------
 *
 * duplicates.c
 *	  Which names of a request occur more than once, in O(n log n), and
 *	  dropping the entries of a response that repeat one.
 *
 * The admin APIs refuse every entry whose name (topic, config key,
 * resource) a request repeats (Kafka's ControllerApis and ConfigAdminManager
 * do the same).  Comparing each name with every other one made a request
 * of n names cost n^2 string comparisons in the listener; requests are
 * bounded only by socket.request.max.bytes, so the names are sorted
 * instead.  ListOffsets uses the same sort to find the partitions and
 * topics its request repeats, with each name's occurrences chained.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "listener/handlers.h"
#include "listener/handlers_admin.h"

static int
name_index_cmp(const void *a, const void *b, void *arg)
{
	char	   *const *names = arg;
	int			ia = *(const int *) a;
	int			ib = *(const int *) b;
	int			c = strcmp(names[ia], names[ib]);

	/* equal names in request order: a run's first is the first occurrence */
	return c != 0 ? c : (ia > ib) - (ia < ib);
}

/*
 * dup[i]: names[i] occurs elsewhere too; later[i] (if wanted): an earlier
 * index holds the same name; next[i] (if wanted, preset to -1): the next
 * index that does.  One sort for all.
 */
static void
mark(char *const *names, int n, bool *dup, bool *later, int *next)
{
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	int			m = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (names[i] != NULL)
			order[m++] = i;
	qsort_arg(order, m, sizeof(int), name_index_cmp, (void *) names);
	for (i = 1; i < m; i++)
	{
		if (strcmp(names[order[i - 1]], names[order[i]]) != 0)
			continue;
		dup[order[i - 1]] = dup[order[i]] = true;
		if (later)
			later[order[i]] = true;
		if (next)
			next[order[i - 1]] = order[i];
	}
	pfree(order);
}

bool *
kp_mark_duplicates(char *const *names, int n, bool **later)
{
	bool	   *dup = palloc0(sizeof(bool) * Max(n, 1));

	if (later)
		*later = palloc0(sizeof(bool) * Max(n, 1));
	mark(names, n, dup, later ? *later : NULL, NULL);
	return dup;
}

int *
kp_chain_duplicates(char *const *names, int n, bool **later)
{
	bool	   *dup = palloc0(sizeof(bool) * Max(n, 1));
	int		   *next = palloc(sizeof(int) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		next[i] = -1;
	*later = palloc0(sizeof(bool) * Max(n, 1));
	mark(names, n, dup, *later, next);
	pfree(dup);
	return next;
}

/*
 * Drops entries[i] (each of size bytes) where drop[i], keeping the others'
 * order; returns how many are left.
 */
int
kp_drop_entries(void *entries, size_t size, const bool *drop, int n)
{
	char	   *a = entries;
	int			kept = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (drop[i])
			continue;
		if (kept != i)
			memcpy(a + (size_t) kept * size, a + (size_t) i * size, size);
		kept++;
	}
	return kept;
}

int
kp_drop_empty_entries(void *entries, size_t size, size_t count_offset, int n)
{
	char	   *a = entries;
	int			kept = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		int32		count;

		memcpy(&count, a + (size_t) i * size + count_offset, sizeof(count));
		if (count <= 0)
			continue;
		if (kept != i)
			memcpy(a + (size_t) kept * size, a + (size_t) i * size, size);
		kept++;
	}
	return kept;
}

void
kp_partition_keys(char *const *names, const int *counts, int n, const int32 *partitions,
				  KpPartitionKeys *keys)
{
	char	  **strs;
	int			i;

	keys->first = palloc(sizeof(int) * (Max(n, 0) + 1));
	keys->n_keys = 0;
	for (i = 0; i < n; i++)
	{
		keys->first[i] = keys->n_keys;
		keys->n_keys += counts[i];
	}
	keys->first[Max(n, 0)] = keys->n_keys;

	/* "partition:topic" cannot be another pair's: a partition has no ':' */
	strs = palloc(sizeof(char *) * Max(keys->n_keys, 1));
	for (i = 0; i < n; i++)
	{
		int			k;

		for (k = keys->first[i]; k < keys->first[i + 1]; k++)
			strs[k] = names[i] == NULL ? NULL : psprintf("%d:%s", partitions[k], names[i]);
	}
	keys->next = kp_chain_duplicates(strs, keys->n_keys, &keys->later);
	keys->next_topic = kp_chain_duplicates(names, n, &keys->topic_later);
	for (i = 0; i < keys->n_keys; i++)
		if (strs[i] != NULL)
			pfree(strs[i]);
	pfree(strs);
}
