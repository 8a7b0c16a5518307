# Shared by test/unit/Makefile and fuzz/Makefile: how to build src/codec as
# frontend code (see shim/postgres.h).  Set TOP to the repository root first.

PG_CONFIG ?= pg_config
PG_INCLUDE := $(shell $(PG_CONFIG) --includedir-server)
PG_LIBDIR := $(shell $(PG_CONFIG) --libdir)
# Debian keeps the frontend static libs in the server's lib dir
PG_PKGLIBDIR := $(shell $(PG_CONFIG) --pkglibdir)

CODEC_SRCS := $(sort $(wildcard $(TOP)/src/codec/*.c))
CODEC_HDRS := $(wildcard $(TOP)/src/codec/*.h) $(TOP)/test/unit/shim/postgres.h
CODEC_CPPFLAGS := -DFRONTEND -I$(TOP)/test/unit/shim -I$(TOP)/src -I$(PG_INCLUDE)
CODEC_LIBS := -L$(PG_PKGLIBDIR) -L$(PG_LIBDIR) -lpgcommon -lpgport \
	-lzstd -llz4 -lz -lsnappy -lm
