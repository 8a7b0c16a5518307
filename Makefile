# kafka_pg: a Kafka broker inside PostgreSQL.  Built with PGXS.
#
#   make && make install          build and install into the pg_config found on PATH
#   make installcheck             pg_regress against a running server (see test/run-tests)

MODULE_big = kafka_pg
EXTENSION = kafka_pg
# The install script is installed with its catalog stamp filled in: a hash
# of sql/kafka_pg--0.1.sql, which the script stores in kafka.catalog_stamp
# and src/catalog/stamp.c is compiled with, so that a library can tell a
# catalog another build's script created (src/catalog/stamp.c).
KP_SCRIPT = sql/kafka_pg--0.1.sql
KP_CATALOG_STAMP := $(shell sha256sum $(KP_SCRIPT) | cut -c1-16)
DATA = $(filter-out $(KP_SCRIPT),$(wildcard sql/kafka_pg--*.sql))
DATA_built = sql/stamped/kafka_pg--0.1.sql
PGFILEDESC = "kafka_pg - a Kafka broker inside PostgreSQL"

SRCS = $(sort $(wildcard src/*/*.c))
OBJS = $(SRCS:.c=.o)

REGRESS = setup topics produce_fetch transactions visibility segments delete_records retention compaction ktable consumer_groups limits acls share_groups bulk read_only search_path
REGRESS_OPTS = --inputdir=. --outputdir=test/regress-out

# PostgreSQL's own warning set (pg_config's CFLAGS) applies, including
# -Wdeclaration-after-statement; the suite builds with COPT=-Werror.
PG_CPPFLAGS = -I$(srcdir)/src -std=gnu11
SHLIB_LINK = -lzstd -llz4 -lz -lsnappy -lssl -lcrypto

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.  Only the gcc compile
# writes the .d files (CFLAGS; the LLVM bitcode compile uses BITCODE_CFLAGS):
# if both did, the last one would leave only its own target in the file.  A
# bitcode file is rebuilt whenever its object is.
override CFLAGS += -MMD -MP
$(OBJS:.o=.bc): %.bc: %.o
-include $(OBJS:.o=.d)
EXTRA_CLEAN = $(OBJS:.o=.d) sql/stamped

sql/stamped/kafka_pg--0.1.sql: $(KP_SCRIPT)
	@mkdir -p sql/stamped
	sed 's/@KP_CATALOG_STAMP@/$(KP_CATALOG_STAMP)/' $< > $@
src/catalog/stamp.o src/catalog/stamp.bc: $(KP_SCRIPT)
src/catalog/stamp.o src/catalog/stamp.bc: override CPPFLAGS += -DKP_CATALOG_STAMP='"$(KP_CATALOG_STAMP)"'

# Generated protocol tables are committed; regenerate with `make protocol`.
# `make check-protocol` regenerates into a temporary folder and fails if the
# committed files differ, and checks that docs/wire-protocol.md's API table
# is what the listener serves (the suite's `generated` part).
PROTOCOL_DEFS ?= ../shared/kafka-protocol
.PHONY: protocol check-protocol
protocol:
	python3 tools/gen_protocol.py --messages $(PROTOCOL_DEFS) --out src/protocol
check-protocol:
	@tmp=$$(mktemp -d) && \
	python3 tools/gen_protocol.py --messages $(PROTOCOL_DEFS) --out $$tmp >/dev/null && \
	for f in messages_gen.h messages_gen.c; do \
		diff -u src/protocol/$$f $$tmp/$$f >/dev/null || \
		{ echo "src/protocol/$$f differs from what tools/gen_protocol.py generates from $(PROTOCOL_DEFS):"; \
		  diff -u src/protocol/$$f $$tmp/$$f | head -40; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp; echo "src/protocol/messages_gen.[ch] match $(PROTOCOL_DEFS)"
	@python3 tools/check_api_docs.py

# PostgreSQL's indentation (pgindent style, via pg_bsd_indent) for the
# hand-written C; `make check-format` is the suite's `format` part.
.PHONY: format check-format
format:
	tools/pgindent
check-format:
	tools/pgindent --check
