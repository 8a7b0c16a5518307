/*-------------------------------------------------------------------------
 *
 * assignor.c
 *	  The consumer protocol's server-side assignors (KIP-848): uniform and
 *	  range.
 *
 * Pure functions (assignor.h): given the members' subscriptions and their
 * previous targets, and every partition of the subscribed topics, compute
 * each member's new target.  consumer_protocol.c runs them when the group
 * epoch moves past the assignment epoch; test/unit/test_assignor.c states
 * what they promise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "group/assignor.h"

bool
kp_assign_subscribes(const KpAssignMember *m, const char *topic)
{
	int			i;

	for (i = 0; i < m->nsubscribed; i++)
		if (strcmp(m->subscribed[i], topic) == 0)
			return true;
	return false;
}

/*
 * uniform: keep what each member had that still exists and that it still
 * subscribes to (a partition stays with the first member that had it),
 * give every unassigned partition to an eligible member with the fewest,
 * then move partitions from the fullest member to the emptiest until no
 * two differ by more than one (where subscriptions allow).
 */
void
kp_assign_uniform(KpAssignMember *m, int n, const KpTPSet *all)
{
	int			i;
	int			k;
	int			rounds;

	/*
	 * drop what is gone or no longer subscribed; a partition goes to one
	 * member
	 */
	for (i = 0; i < n; i++)
	{
		KpTPSet		keep;

		memset(&keep, 0, sizeof(keep));
		for (k = 0; k < m[i].target.n; k++)
		{
			KpTP	   *tp = &m[i].target.items[k];
			int			j;
			bool		taken = false;

			if (!kp_tps_contains(all, tp->topic, tp->partition) ||
				!kp_assign_subscribes(&m[i], tp->topic))
				continue;
			for (j = 0; j < i; j++)
				if (kp_tps_contains(&m[j].target, tp->topic, tp->partition))
					taken = true;
			if (!taken)
				kp_tps_add(&keep, tp->topic, tp->partition);
		}
		m[i].target = keep;
	}
	/* unassigned partitions to the eligible member with the fewest */
	for (k = 0; k < all->n; k++)
	{
		KpTP	   *tp = &all->items[k];
		int			best = -1;
		bool		assigned = false;

		for (i = 0; i < n; i++)
			if (kp_tps_contains(&m[i].target, tp->topic, tp->partition))
				assigned = true;
		if (assigned)
			continue;
		for (i = 0; i < n; i++)
			if (kp_assign_subscribes(&m[i], tp->topic) &&
				(best < 0 || m[i].target.n < m[best].target.n))
				best = i;
		if (best >= 0)
			kp_tps_add(&m[best].target, tp->topic, tp->partition);
	}
	/* even out: move from the fullest to the emptiest while they differ by 2+ */
	for (rounds = 0; rounds < all->n + n; rounds++)
	{
		int			hi = -1;
		int			lo = -1;
		bool		moved = false;

		for (i = 0; i < n; i++)
		{
			if (hi < 0 || m[i].target.n > m[hi].target.n)
				hi = i;
			if (lo < 0 || m[i].target.n < m[lo].target.n)
				lo = i;
		}
		if (hi < 0 || m[hi].target.n - m[lo].target.n < 2)
			break;
		for (k = m[hi].target.n - 1; k >= 0; k--)
		{
			KpTP		tp = m[hi].target.items[k];

			if (kp_assign_subscribes(&m[lo], tp.topic))
			{
				kp_tps_remove(&m[hi].target, tp.topic, tp.partition);
				kp_tps_add(&m[lo].target, tp.topic, tp.partition);
				moved = true;
				break;
			}
		}
		if (!moved)
			break;
	}
}

/*
 * range: for each topic, its partitions in order, split into contiguous
 * ranges over the members that subscribe to it, in member order; the first
 * (count % subscribers) members get one more.
 */
void
kp_assign_range(KpAssignMember *m, int n, const KpTPSet *all)
{
	int			i;
	int			k;

	for (i = 0; i < n; i++)
		memset(&m[i].target, 0, sizeof(KpTPSet));
	for (k = 0; k < all->n;)
	{
		const char *topic = all->items[k].topic;
		int			count = 0;
		int			nsub = 0;
		int			idx = 0;

		while (k + count < all->n && strcmp(all->items[k + count].topic, topic) == 0)
			count++;
		for (i = 0; i < n; i++)
			if (kp_assign_subscribes(&m[i], topic))
				nsub++;
		for (i = 0; i < n && nsub > 0; i++)
		{
			int			share;
			int			first;
			int			j;

			if (!kp_assign_subscribes(&m[i], topic))
				continue;
			share = count / nsub + (idx < count % nsub ? 1 : 0);
			first = idx * (count / nsub) + Min(idx, count % nsub);
			for (j = 0; j < share; j++)
				kp_tps_add(&m[i].target, topic, all->items[k + first + j].partition);
			idx++;
		}
		k += count;
	}
}
