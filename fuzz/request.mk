# Fuzzing the Kafka protocol codec (src/protocol); see fuzz/README-request.md.
# Run from the repository root:
#
#   make -f fuzz/request.mk fuzz      libFuzzer binary fuzz/fuzz_request (clang)
#   make -f fuzz/request.mk run       fuzz for FUZZ_TIME seconds (default 600)
#   make -f fuzz/request.mk replay    run the seed corpus once; exits 0 if clean
#   make -f fuzz/request.mk seeds     rebuild fuzz/corpus/request from the fixtures

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
PG_CONFIG ?= pg_config
PG_INCLUDE := $(shell $(PG_CONFIG) --includedir-server)
PG_PKGLIBDIR := $(shell $(PG_CONFIG) --pkglibdir)
PG_LIBDIR := $(shell $(PG_CONFIG) --libdir)

CLANG ?= clang
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FFLAGS := -O1 -g -std=gnu11 -Wno-declaration-after-statement -Wno-ignored-attributes \
	-DFRONTEND -I$(TOP)/test/unit/shim -I$(TOP)/test/protocol -I$(TOP)/src -I$(PG_INCLUDE)
SRCS := $(TOP)/fuzz/fuzz_request.c $(TOP)/test/protocol/shim_alloc.c \
	$(wildcard $(TOP)/src/protocol/wire*.c) $(TOP)/src/protocol/errors.c $(TOP)/src/protocol/messages_gen.c \
	$(TOP)/src/codec/varint.c
HDRS := $(wildcard $(TOP)/src/protocol/*.h) $(TOP)/test/protocol/shim_alloc.h
LIBS := -L$(PG_PKGLIBDIR) -L$(PG_LIBDIR) -lpgcommon -lpgport -lm
CORPUS := $(TOP)/fuzz/corpus/request
OUT := $(TOP)/fuzz/out/request
FUZZ_TIME ?= 600

.PHONY: fuzz run replay seeds

fuzz: $(TOP)/fuzz/fuzz_request

$(TOP)/fuzz/fuzz_request: $(SRCS) $(HDRS)
	$(CLANG) $(FFLAGS) -fsanitize=fuzzer $(SAN) -o $@ $(SRCS) $(LIBS)

# New inputs go to fuzz/out/request so the committed seed corpus stays small.
run: fuzz
	mkdir -p $(OUT)
	$(TOP)/fuzz/fuzz_request -max_total_time=$(FUZZ_TIME) -max_len=65536 \
		-rss_limit_mb=2048 -artifact_prefix=$(OUT)/ $(OUT) $(CORPUS)

replay: fuzz
	$(TOP)/fuzz/fuzz_request -runs=0 $(CORPUS)

seeds:
	$(MAKE) -C $(TOP)/test/protocol corpus
