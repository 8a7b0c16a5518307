/*-------------------------------------------------------------------------
 *
 * tpset.c
 *	  Sets of topic partitions (assignor.h), and their text form in the
 *	  catalog, "topic:0,1|other:3".
 *
 * Pure functions over palloc'd memory, shared by the consumer protocol and
 * the unit tests.  Topic names cannot contain ':', ',' or '|' (Kafka allows
 * [a-zA-Z0-9._-]), so the text form needs no quoting.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "group/assignor.h"

static int
tp_cmp(const void *a, const void *b)
{
	const KpTP *x = a;
	const KpTP *y = b;
	int			c = strcmp(x->topic, y->topic);

	if (c != 0)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

bool
kp_tps_contains(const KpTPSet *s, const char *topic, int32 partition)
{
	KpTP		key;

	if (s->n == 0)
		return false;
	key.topic = (char *) topic;
	key.partition = partition;
	return bsearch(&key, s->items, s->n, sizeof(KpTP), tp_cmp) != NULL;
}

void
kp_tps_add(KpTPSet *s, const char *topic, int32 partition)
{
	if (kp_tps_contains(s, topic, partition))
		return;
	if (s->n == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 16;
		s->items = s->items ? repalloc(s->items, sizeof(KpTP) * s->cap) :
			palloc(sizeof(KpTP) * s->cap);
	}
	s->items[s->n].topic = pstrdup(topic);
	s->items[s->n].partition = partition;
	s->n++;
	qsort(s->items, s->n, sizeof(KpTP), tp_cmp);
}

void
kp_tps_remove(KpTPSet *s, const char *topic, int32 partition)
{
	int			i;

	for (i = 0; i < s->n; i++)
	{
		if (s->items[i].partition == partition && strcmp(s->items[i].topic, topic) == 0)
		{
			memmove(&s->items[i], &s->items[i + 1], sizeof(KpTP) * (s->n - i - 1));
			s->n--;
			return;
		}
	}
}

bool
kp_tps_equal(const KpTPSet *a, const KpTPSet *b)
{
	int			i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (tp_cmp(&a->items[i], &b->items[i]) != 0)
			return false;
	return true;
}

/* Is every item of a also in b? */
bool
kp_tps_within(const KpTPSet *a, const KpTPSet *b)
{
	int			i;

	for (i = 0; i < a->n; i++)
		if (!kp_tps_contains(b, a->items[i].topic, a->items[i].partition))
			return false;
	return true;
}

void
kp_tps_parse(const char *str, KpTPSet *out)
{
	char	   *copy = pstrdup(str ? str : "");
	char	   *save1;
	char	   *topic_part;

	memset(out, 0, sizeof(*out));
	for (topic_part = strtok_r(copy, "|", &save1); topic_part;
		 topic_part = strtok_r(NULL, "|", &save1))
	{
		char	   *colon = strchr(topic_part, ':');
		char	   *save2;
		char	   *num;

		if (colon == NULL)
			continue;
		*colon = '\0';
		for (num = strtok_r(colon + 1, ",", &save2); num; num = strtok_r(NULL, ",", &save2))
			kp_tps_add(out, topic_part, (int32) strtol(num, NULL, 10));
	}
}

char *
kp_tps_format(const KpTPSet *s)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < s->n; i++)
	{
		if (i == 0 || strcmp(s->items[i - 1].topic, s->items[i].topic) != 0)
			appendStringInfo(&buf, "%s%s:%d", i ? "|" : "", s->items[i].topic, s->items[i].partition);
		else
			appendStringInfo(&buf, ",%d", s->items[i].partition);
	}
	return buf.data;
}
