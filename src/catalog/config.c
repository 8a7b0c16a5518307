/*-------------------------------------------------------------------------
 *
 * config.c
 *	  Topic configs: names, defaults and validation as Kafka 4.x has them.
 *
 * The table follows Kafka's topic-level config documentation
 * (generated/topic_config.html) with the 4.0 constraints of KIP-1030
 * (segment.bytes >= 1 MiB, message.timestamp.after.max.ms = 1 hour).
 * Configs that only make sense for a replicated, file-based broker are
 * accepted and stored so clients that set them are not refused, and are
 * documented in docs/topics.md as having no effect.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "utils/builtins.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"

static const char *const cleanup_policies[] = {"delete", "compact", NULL};
static const char *const compression_types[] = {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer", NULL};
static const char *const timestamp_types[] = {"CreateTime", "LogAppendTime", NULL};

#define LONG_MAX_D	9223372036854775807.0
#define INT_MAX_D	2147483647.0

const KpConfigDef kp_topic_config_defs[] = {
	{"cleanup.policy", KP_CONF_LIST, "delete", 0, 0, cleanup_policies,
	"delete: old segments are removed by retention; compact: only the latest record per key is kept"},
	{"compression.type", KP_CONF_ENUM, "producer", 0, 0, compression_types,
	"final compression of the topic's batches; producer keeps what the producer sent"},
	{"compression.gzip.level", KP_CONF_INT, "-1", -1, 9, NULL, "gzip level when compression.type=gzip"},
	{"compression.lz4.level", KP_CONF_INT, "9", 1, 17, NULL, "lz4 level when compression.type=lz4"},
	{"compression.zstd.level", KP_CONF_INT, "3", -131072, 22, NULL, "zstd level when compression.type=zstd"},
	{"delete.retention.ms", KP_CONF_LONG, "86400000", 0, LONG_MAX_D, NULL,
	"how long tombstones are kept on compacted topics"},
	{"errors.deadletterqueue.group.enable", KP_CONF_BOOLEAN, "false", 0, 0, NULL,
	"accepted, no effect (share groups here write no dead-letter queue)"},
	{"file.delete.delay.ms", KP_CONF_LONG, "60000", 0, LONG_MAX_D, NULL, "how long segments that left the log (retention, DeleteRecords, compaction) stay readable before their storage is dropped"},
	{"flush.messages", KP_CONF_LONG, "9223372036854775807", 1, LONG_MAX_D, NULL, "accepted, no effect (durability is the WAL's)"},
	{"flush.ms", KP_CONF_LONG, "9223372036854775807", 0, LONG_MAX_D, NULL, "accepted, no effect (durability is the WAL's)"},
	{"follower.replication.throttled.replicas", KP_CONF_STRING, "", 0, 0, NULL, "accepted, no effect"},
	{"index.interval.bytes", KP_CONF_INT, "4096", 0, INT_MAX_D, NULL, "accepted; the index has one entry per 8 kB page"},
	{"leader.replication.throttled.replicas", KP_CONF_STRING, "", 0, 0, NULL, "accepted, no effect"},
	{"local.retention.bytes", KP_CONF_LONG, "-2", -2, LONG_MAX_D, NULL, "accepted, no effect (no tiered storage)"},
	{"local.retention.ms", KP_CONF_LONG, "-2", -2, LONG_MAX_D, NULL, "accepted, no effect (no tiered storage)"},
	{"max.compaction.lag.ms", KP_CONF_LONG, "9223372036854775807", 1, LONG_MAX_D, NULL,
	"longest time a record stays uncompacted"},
	{"max.decompressed.message.bytes", KP_CONF_INT, "2147483639", 1, 2147483639.0, NULL,
	"largest record (its size after its length field) a compressed batch produced on the wire may carry"},
	{"max.message.bytes", KP_CONF_INT, "1048588", 0, INT_MAX_D, NULL,
	"largest record batch the topic accepts"},
	{"message.timestamp.after.max.ms", KP_CONF_LONG, "3600000", 0, LONG_MAX_D, NULL,
	"how far in the future a CreateTime timestamp may be"},
	{"message.timestamp.before.max.ms", KP_CONF_LONG, "9223372036854775807", 0, LONG_MAX_D, NULL,
	"how far in the past a CreateTime timestamp may be"},
	{"message.timestamp.type", KP_CONF_ENUM, "CreateTime", 0, 0, timestamp_types,
	"CreateTime keeps the producer's timestamps, LogAppendTime stamps batches on append"},
	{"min.cleanable.dirty.ratio", KP_CONF_DOUBLE, "0.5", 0, 1, NULL,
	"share of uncompacted log that triggers compaction"},
	{"min.compaction.lag.ms", KP_CONF_LONG, "0", 0, LONG_MAX_D, NULL,
	"shortest time a record stays uncompacted"},
	{"min.insync.replicas", KP_CONF_INT, "1", 1, INT_MAX_D, NULL,
	"acks=all waits for synchronous standbys (see docs/durability.md)"},
	{"preallocate", KP_CONF_BOOLEAN, "false", 0, 0, NULL, "accepted, no effect"},
	{"remote.copy.lag.bytes", KP_CONF_LONG, "-1", -1, LONG_MAX_D, NULL, "accepted, no effect (no tiered storage)"},
	{"remote.copy.lag.ms", KP_CONF_LONG, "0", -1, LONG_MAX_D, NULL, "accepted, no effect (no tiered storage)"},
	{"remote.log.copy.disable", KP_CONF_BOOLEAN, "false", 0, 0, NULL, "accepted, no effect (no tiered storage)"},
	{"remote.log.delete.on.disable", KP_CONF_BOOLEAN, "false", 0, 0, NULL, "accepted, no effect (no tiered storage)"},
	{"remote.storage.enable", KP_CONF_BOOLEAN, "false", 0, 0, NULL, "accepted; only false is supported"},
	{"retention.bytes", KP_CONF_LONG, "-1", -1, LONG_MAX_D, NULL,
	"largest size of a partition before old segments are deleted; -1 for no limit"},
	{"retention.ms", KP_CONF_LONG, "604800000", -1, LONG_MAX_D, NULL,
	"longest time a segment is kept; -1 for no limit"},
	{"segment.bytes", KP_CONF_INT, "1073741824", 1048576, INT_MAX_D, NULL,
	"size at which the active segment rolls"},
	{"segment.index.bytes", KP_CONF_INT, "10485760", 4, INT_MAX_D, NULL, "accepted; the index lives in the segment's pages"},
	{"segment.jitter.ms", KP_CONF_LONG, "0", 0, LONG_MAX_D, NULL, "accepted, no effect"},
	{"segment.ms", KP_CONF_LONG, "604800000", 1, LONG_MAX_D, NULL,
	"age at which the active segment rolls"},
	{"unclean.leader.election.enable", KP_CONF_BOOLEAN, "false", 0, 0, NULL, "accepted, no effect (one node)"},
};

const int	kp_topic_config_count = lengthof(kp_topic_config_defs);

int
kp_config_index(const char *name)
{
	int			i;

	for (i = 0; i < kp_topic_config_count; i++)
		if (strcmp(kp_topic_config_defs[i].name, name) == 0)
			return i;
	return -1;
}

static void
invalid(const char *name, const char *value, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_KP_INVALID_CONFIG),
			 errmsg("invalid value \"%s\" for topic config \"%s\"", value, name),
			 errdetail("%s", why)));
}

static bool
in_choices(const char *const *choices, const char *s, int len)
{
	for (; *choices; choices++)
		if ((int) strlen(*choices) == len && strncmp(*choices, s, len) == 0)
			return true;
	return false;
}

/* Is s (len bytes) an element of the comma-separated list? */
static bool
listed(const char *list, const char *s, int len)
{
	const char *p = list;

	while (*p)
	{
		const char *comma = strchr(p, ',');
		int			n = comma ? (int) (comma - p) : (int) strlen(p);

		if (n == len && strncmp(p, s, len) == 0)
			return true;
		if (!comma)
			break;
		p = comma + 1;
	}
	return false;
}

static char *
choices_text(const char *const *choices)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (; *choices; choices++)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", *choices);
	return buf.data;
}

char *
kp_config_check(const char *name, const char *value)
{
	int			idx = kp_config_index(name);
	const KpConfigDef *def;

	if (idx < 0)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_CONFIG),
				 errmsg("unknown topic config \"%s\"", name),
				 errhint("kafka.topic_configs lists the topic configs and their defaults.")));
	def = &kp_topic_config_defs[idx];

	switch (def->type)
	{
		case KP_CONF_LONG:
		case KP_CONF_INT:
			{
				char	   *end;
				long long	v;

				errno = 0;
				v = strtoll(value, &end, 10);
				if (*value == '\0' || *end != '\0' || errno == ERANGE ||
					(def->type == KP_CONF_INT && (v < PG_INT32_MIN || v > PG_INT32_MAX)))
					invalid(name, value, def->type == KP_CONF_INT ?
							"Expected a 32-bit integer." : "Expected a 64-bit integer.");
				if ((double) v < def->min || (double) v > def->max)
					invalid(name, value,
							psprintf("Value must be at least %.0f%s.", def->min,
									 def->max < LONG_MAX_D && def->max != INT_MAX_D ?
									 psprintf(" and at most %.0f", def->max) : ""));
				return psprintf("%lld", v);
			}
		case KP_CONF_DOUBLE:
			{
				char	   *end;
				double		v;

				errno = 0;
				v = strtod(value, &end);
				if (*value == '\0' || *end != '\0' || errno == ERANGE || isnan(v))
					invalid(name, value, "Expected a number.");
				if (v < def->min || v > def->max)
					invalid(name, value, psprintf("Value must be between %g and %g.",
												  def->min, def->max));
				return pstrdup(value);
			}
		case KP_CONF_BOOLEAN:
			if (strcmp(name, "remote.storage.enable") == 0 &&
				pg_strcasecmp(value, "true") == 0)
				invalid(name, value, "Tiered storage is not supported.");
			if (pg_strcasecmp(value, "true") == 0)
				return pstrdup("true");
			if (pg_strcasecmp(value, "false") == 0)
				return pstrdup("false");
			invalid(name, value, "Expected true or false.");
			break;
		case KP_CONF_STRING:
			return pstrdup(value);
		case KP_CONF_ENUM:
			if (!in_choices(def->choices, value, strlen(value)))
				invalid(name, value, psprintf("Expected one of: %s.", choices_text(def->choices)));
			return pstrdup(value);
		case KP_CONF_LIST:
			{
				/*
				 * comma-separated, each from the choices, each once (a repeat
				 * is dropped), none empty; the whole list may be empty
				 * (blank), as Kafka 4.4's cleanup.policy: no policy, the log
				 * is kept whole
				 */
				StringInfoData out;
				const char *p = value;

				initStringInfo(&out);
				while (*p == ' ')
					p++;
				if (*p == '\0')
					return out.data;
				p = value;
				for (;;)
				{
					const char *comma = strchr(p, ',');
					int			len = comma ? (int) (comma - p) : (int) strlen(p);

					while (len > 0 && *p == ' ')
						p++, len--;
					while (len > 0 && p[len - 1] == ' ')
						len--;
					if (len == 0)
						invalid(name, value, psprintf("Configuration '%s' values must not be empty.", name));
					if (!in_choices(def->choices, p, len))
						invalid(name, value, psprintf("Expected a comma-separated list of: %s.",
													  choices_text(def->choices)));
					if (!listed(out.data, p, len))
						appendStringInfo(&out, "%s%.*s", out.len ? "," : "", len, p);
					if (!comma)
						break;
					p = comma + 1;
				}
				return out.data;
			}
	}
	return NULL;				/* keep compiler quiet */
}
