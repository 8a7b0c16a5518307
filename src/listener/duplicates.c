/*-------------------------------------------------------------------------
 *
 * duplicates.c
 *	  Which names of a request occur more than once, in O(n log n).
 *
 * The admin APIs refuse every entry whose name (topic, config key,
 * resource) a request repeats (Kafka's ControllerApis and ConfigAdminManager
 * do the same).  Comparing each name with every other one made a request
 * of n names cost n^2 string comparisons in the listener; requests are
 * bounded only by socket.request.max.bytes, so the names are sorted
 * instead.
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

	return strcmp(names[ia], names[ib]);
}

bool *
kp_mark_duplicates(char *const *names, int n)
{
	bool	   *dup = palloc0(sizeof(bool) * Max(n, 1));
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	int			m = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (names[i] != NULL)
			order[m++] = i;
	qsort_arg(order, m, sizeof(int), name_index_cmp, (void *) names);
	for (i = 1; i < m; i++)
		if (strcmp(names[order[i - 1]], names[order[i]]) == 0)
			dup[order[i - 1]] = dup[order[i]] = true;
	pfree(order);
	return dup;
}
