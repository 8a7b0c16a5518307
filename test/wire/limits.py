#!/usr/bin/env python3
"""Issue 10's resource limits and small produce defects, with nothing but
sockets, so the same file runs against kafka_pg and against Apache Kafka 4.4
(test/clients/kafka/kafka.sh):

- a batch whose recordsCount is not lastOffsetDelta + 1 is refused with
  INVALID_RECORD (LogValidator: "Inconsistent batch offset range") and
  nothing of it is stored;
- a Produce with two batches for one partition is refused with INVALID_RECORD
  (ProduceRequest.validateRecords: exactly one batch per partition at v3+),
  neither batch is stored, and the connection goes on serving.

Usage: limits.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import struct
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.util import calc_crc32c  # noqa: E402

RUN = uuid.uuid4().hex[:8]
INVALID_RECORD = 87
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"not ok - {name} {detail}")


def with_count(batch, count):
    """The batch with recordsCount (bytes 57..60) set to count, CRC redone."""
    b = bytearray(batch)
    b[57:61] = struct.pack(">i", count)
    b[17:21] = struct.pack(">I", calc_crc32c(bytes(b[21:])))
    return bytes(b)


def gapped_batch(deltas):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for d in deltas:
        b.append(d, timestamp=ts, key=None, value=b"v%d" % d, headers=[])
    return bytes(b.build())


def records_stored(c, topic):
    """How many records partition 0 holds (ListOffsets v1, latest)."""
    body = kc.i32(-1) + kc.array([kc.string(topic) + kc.array([kc.i32(0) + kc.i64(-1)])])
    r = c.call(2, 1, body)
    if r is None:
        return None
    out = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    return out[0][1][0][3]


def check_produce_defects():
    c = kc.Conn()
    topic = f"limits-produce-{RUN}"
    check("create topic", kc.create_topic(c, topic) == 0)
    time.sleep(1)

    good = kc.build_batch(0, [b"a", b"b", b"c"])
    for count in (2, 4):
        err, _ = kc.produce(c, topic, with_count(good, count))
        check(f"recordsCount {count} with lastOffsetDelta 2: INVALID_RECORD", err == INVALID_RECORD,
              f"got {err}")
    # each record parses and the count matches them, but the offset range is wider
    gappy = gapped_batch([0, 1, 5])
    err, _ = kc.produce(c, topic, gappy)
    check("3 records at offset deltas 0, 1, 5 (lastOffsetDelta 5): INVALID_RECORD",
          err == INVALID_RECORD, f"got {err}")
    check("nothing of them stored", records_stored(c, topic) == 0, f"{records_stored(c, topic)}")

    second = kc.build_batch(0, [b"d"])
    err, _ = kc.produce(c, topic, good + second)
    check("two batches for one partition: INVALID_RECORD", err == INVALID_RECORD, f"got {err}")
    err, _ = kc.produce(c, topic, good + with_count(second, 2))
    check("a good batch and a bad one: INVALID_RECORD", err == INVALID_RECORD, f"got {err}")
    check("neither stored", records_stored(c, topic) == 0, f"{records_stored(c, topic)}")

    err, base = kc.produce(c, topic, good)
    check("the same connection then stores one good batch at offset 0", (err, base) == (0, 0),
          f"got {(err, base)}")
    check("3 records stored", records_stored(c, topic) == 3, f"{records_stored(c, topic)}")
    c.close()


def main():
    check_produce_defects()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
