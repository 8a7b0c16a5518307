# kafka_pg: a Kafka broker inside PostgreSQL.  Built with PGXS.
#
#   make && make install          build and install into the pg_config found on PATH
#   make installcheck             pg_regress against a running server (see test/run-tests)

MODULE_big = kafka_pg
EXTENSION = kafka_pg
DATA = $(wildcard sql/kafka_pg--*.sql)
PGFILEDESC = "kafka_pg - a Kafka broker inside PostgreSQL"

SRCS = $(sort $(wildcard src/*/*.c))
OBJS = $(SRCS:.c=.o)

REGRESS = setup topics produce_fetch transactions segments delete_records consumer_groups
REGRESS_OPTS = --inputdir=. --outputdir=test/regress-out

PG_CPPFLAGS = -I$(srcdir)/src -std=gnu11 -Wno-declaration-after-statement
SHLIB_LINK = -lzstd -llz4 -lz -lsnappy

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)
EXTRA_CLEAN = $(OBJS:.o=.d)

# Generated protocol tables are committed; regenerate with `make protocol`.
.PHONY: protocol
protocol:
	python3 tools/gen_protocol.py --messages ../shared/kafka-protocol --out src/protocol
