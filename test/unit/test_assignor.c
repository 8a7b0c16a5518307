/*-------------------------------------------------------------------------
 *
 * test_assignor.c
 *	  Unit tests of the consumer protocol's server-side assignors and
 *	  partition sets (src/group/assignor.h), run without a server.
 *
 * Built as frontend code (see shim/postgres.h) by `make -C test/unit check`.
 * Read top to bottom it says what the assignors promise: uniform is
 * balanced (no two members differ by more than one partition where their
 * subscriptions allow), gives each partition to exactly one subscriber, and
 * is sticky (a member keeps what does not have to move); range splits each
 * topic into contiguous ranges in member order, as Kafka's RangeAssignor.
 *
 * The last line printed is "N passed, M failed"; the exit code is nonzero
 * if anything failed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/assignor.h"
#include "check.h"

int			n_passed = 0;
int			n_failed = 0;

static char *orders_only[] = {"orders"};
static char *both[] = {"orders", "payments"};

static void
all_partitions(KpTPSet *all, const char *topic, int count)
{
	int			p;

	for (p = 0; p < count; p++)
		kp_tps_add(all, topic, p);
}

static KpAssignMember
member(int nsub, char **subs, const char *previous_target)
{
	KpAssignMember m;

	m.nsubscribed = nsub;
	m.subscribed = subs;
	kp_tps_parse(previous_target, &m.target);
	return m;
}

/* every partition of all is in exactly one target, and only a subscriber's */
static bool
each_partition_once(KpAssignMember *m, int n, const KpTPSet *all)
{
	int			k;
	int			i;

	for (k = 0; k < all->n; k++)
	{
		int			owners = 0;

		for (i = 0; i < n; i++)
			if (kp_tps_contains(&m[i].target, all->items[k].topic, all->items[k].partition))
			{
				owners++;
				if (!kp_assign_subscribes(&m[i], all->items[k].topic))
					return false;
			}
		if (owners != 1)
			return false;
	}
	for (i = 0; i < n; i++)
		for (k = 0; k < m[i].target.n; k++)
			if (!kp_tps_contains(all, m[i].target.items[k].topic, m[i].target.items[k].partition))
				return false;
	return true;
}

static void
test_tpset(void)
{
	KpTPSet		s;
	KpTPSet		t;

	kp_tps_parse("orders:3,1|audit:0", &s);
	CHECK(s.n == 3, "parsed %d", s.n);
	CHECK(strcmp(kp_tps_format(&s), "audit:0|orders:1,3") == 0,
		  "sorted by topic then partition: %s", kp_tps_format(&s));
	CHECK(kp_tps_contains(&s, "orders", 3) && !kp_tps_contains(&s, "orders", 2), "contains");
	kp_tps_add(&s, "orders", 3);
	CHECK(s.n == 3, "adding a member again changes nothing");
	kp_tps_remove(&s, "audit", 0);
	CHECK(strcmp(kp_tps_format(&s), "orders:1,3") == 0, "remove: %s", kp_tps_format(&s));
	kp_tps_parse(kp_tps_format(&s), &t);
	CHECK(kp_tps_equal(&s, &t), "format and parse round-trip");
	kp_tps_parse("", &t);
	CHECK(t.n == 0 && strcmp(kp_tps_format(&t), "") == 0, "the empty set is the empty string");
	kp_tps_remove(&s, "orders", 1);
	kp_tps_parse(NULL, &t);
	CHECK(t.n == 0, "NULL parses as the empty set");
	kp_tps_parse("orders:1,3", &t);
	CHECK(kp_tps_within(&s, &t) && !kp_tps_within(&t, &s) && kp_tps_within(&s, &s),
		  "within: every item also in the other set");
	kp_tps_parse("audit:3", &t);
	CHECK(!kp_tps_within(&t, &s), "within: another topic's partition is not");
	kp_tps_parse("", &t);
	CHECK(kp_tps_within(&t, &s), "within: the empty set is within any");
}

static void
test_uniform_balanced(void)
{
	KpTPSet		all = {0};
	KpAssignMember m[3];
	int			i;

	all_partitions(&all, "orders", 7);
	for (i = 0; i < 3; i++)
		m[i] = member(1, orders_only, "");
	kp_assign_uniform(m, 3, &all);
	CHECK(each_partition_once(m, 3, &all), "uniform: every partition to one member");
	for (i = 0; i < 3; i++)
		CHECK(m[i].target.n == 2 || m[i].target.n == 3,
			  "uniform: 7 partitions over 3 members, member %d got %d", i, m[i].target.n);
}

static void
test_uniform_sticky(void)
{
	KpTPSet		all = {0};
	KpAssignMember m[3];

	/* two members had 3 each; a third joins: each gives up one, keeps two */
	all_partitions(&all, "orders", 6);
	m[0] = member(1, orders_only, "orders:0,1,2");
	m[1] = member(1, orders_only, "orders:3,4,5");
	m[2] = member(1, orders_only, "");
	kp_assign_uniform(m, 3, &all);
	CHECK(each_partition_once(m, 3, &all), "sticky: every partition to one member");
	CHECK(m[0].target.n == 2 && m[1].target.n == 2 && m[2].target.n == 2,
		  "sticky: 2/2/2, got %d/%d/%d", m[0].target.n, m[1].target.n, m[2].target.n);
	CHECK(kp_tps_contains(&m[0].target, "orders", 0) && kp_tps_contains(&m[0].target, "orders", 1),
		  "sticky: member 0 keeps 0 and 1: %s", kp_tps_format(&m[0].target));
	CHECK(kp_tps_contains(&m[1].target, "orders", 3) && kp_tps_contains(&m[1].target, "orders", 4),
		  "sticky: member 1 keeps 3 and 4: %s", kp_tps_format(&m[1].target));

	/* a member leaves: its partitions go to the others, nobody else moves */
	m[0] = member(1, orders_only, "orders:0,1");
	m[1] = member(1, orders_only, "orders:3,4");
	kp_assign_uniform(m, 2, &all);
	CHECK(each_partition_once(m, 2, &all), "leave: every partition to one member");
	CHECK(m[0].target.n == 3 && m[1].target.n == 3, "leave: 3/3");
	CHECK(kp_tps_contains(&m[0].target, "orders", 0) && kp_tps_contains(&m[0].target, "orders", 1) &&
		  kp_tps_contains(&m[1].target, "orders", 3) && kp_tps_contains(&m[1].target, "orders", 4),
		  "leave: what stays stays: %s / %s", kp_tps_format(&m[0].target), kp_tps_format(&m[1].target));
}

static void
test_uniform_subscriptions(void)
{
	KpTPSet		all = {0};
	KpAssignMember m[2];

	/* a partition goes only to a member that subscribes to its topic */
	all_partitions(&all, "orders", 2);
	all_partitions(&all, "payments", 4);
	m[0] = member(1, orders_only, "");
	m[1] = member(2, both, "");
	kp_assign_uniform(m, 2, &all);
	CHECK(each_partition_once(m, 2, &all), "mixed subscriptions: every partition to a subscriber");
	CHECK(m[0].target.n == 2 && m[1].target.n == 4,
		  "mixed subscriptions: the orders-only member can take only orders (%s / %s)",
		  kp_tps_format(&m[0].target), kp_tps_format(&m[1].target));

	/* an unsubscribed topic and a deleted partition leave the target */
	memset(&all, 0, sizeof(all));
	all_partitions(&all, "orders", 1);
	m[0] = member(1, orders_only, "orders:0,1|payments:0");
	kp_assign_uniform(m, 1, &all);
	CHECK(strcmp(kp_tps_format(&m[0].target), "orders:0") == 0,
		  "gone partitions and topics are dropped: %s", kp_tps_format(&m[0].target));

	/* two members claiming one partition: the first keeps it */
	all_partitions(&all, "orders", 2);
	m[0] = member(1, orders_only, "orders:0");
	m[1] = member(1, orders_only, "orders:0");
	kp_assign_uniform(m, 2, &all);
	CHECK(each_partition_once(m, 2, &all) && kp_tps_contains(&m[0].target, "orders", 0),
		  "a doubly claimed partition goes to one member: %s / %s",
		  kp_tps_format(&m[0].target), kp_tps_format(&m[1].target));

	/* nobody subscribes: nobody gets anything */
	kp_assign_uniform(m, 0, &all);
	CHECK(true, "no members is not an error");
}

static void
test_range(void)
{
	KpTPSet		all = {0};
	KpAssignMember m[3];

	/* Kafka's RangeAssignor: 7 partitions over 3 members is 0-2, 3-4, 5-6 */
	all_partitions(&all, "orders", 7);
	m[0] = member(1, orders_only, "orders:6");
	m[1] = member(1, orders_only, "");
	m[2] = member(1, orders_only, "");
	kp_assign_range(m, 3, &all);
	CHECK(strcmp(kp_tps_format(&m[0].target), "orders:0,1,2") == 0 &&
		  strcmp(kp_tps_format(&m[1].target), "orders:3,4") == 0 &&
		  strcmp(kp_tps_format(&m[2].target), "orders:5,6") == 0,
		  "range: %s / %s / %s (not sticky: the previous target does not count)",
		  kp_tps_format(&m[0].target), kp_tps_format(&m[1].target), kp_tps_format(&m[2].target));

	/* per topic, over the members that subscribe to it */
	all_partitions(&all, "payments", 2);
	m[0] = member(2, both, "");
	m[1] = member(1, orders_only, "");
	m[2] = member(2, both, "");
	kp_assign_range(m, 3, &all);
	CHECK(each_partition_once(m, 3, &all), "range: every partition to one subscriber");
	CHECK(kp_tps_contains(&m[0].target, "payments", 0) && kp_tps_contains(&m[2].target, "payments", 1),
		  "range: payments split over its two subscribers: %s / %s",
		  kp_tps_format(&m[0].target), kp_tps_format(&m[2].target));

	/* more members than partitions: the last ones get none */
	memset(&all, 0, sizeof(all));
	all_partitions(&all, "orders", 2);
	m[0] = member(1, orders_only, "");
	m[1] = member(1, orders_only, "");
	m[2] = member(1, orders_only, "");
	kp_assign_range(m, 3, &all);
	CHECK(m[0].target.n == 1 && m[1].target.n == 1 && m[2].target.n == 0,
		  "range: 2 partitions over 3 members is 1/1/0");
}

int
main(void)
{
	test_tpset();
	test_uniform_balanced();
	test_uniform_sticky();
	test_uniform_subscriptions();
	test_range();
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed == 0 ? 0 : 1;
}
