#!/usr/bin/python3
"""Write record batches made by a real client library into fixtures/.

The C unit test (test_codec.c) decodes these bytes, so the codec is checked
against what a client actually sends and not only against itself.  The
client is kafka-python's DefaultRecordBatchBuilder, the code its producer
uses to encode RecordBatch v2.  Needs kafka-python plus its codec modules
(Debian: python3-kafka python3-lz4 python3-snappy python3-zstandard).

The record set is fixed and mirrored in test_codec.c (check_fixture_records):
change both together.  Run: /usr/bin/python3 test/unit/make_fixtures.py
"""
import os
import sys

from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1700000000000
PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE = 1234, 5, 42


def records():
    """The fixture records; keep in sync with test_codec.c."""
    return [
        (b"key-0", b"value-0", [("h1", b"v1"), ("h2", b"")]),
        (None, b"value-1", []),
        (b"key-2", None, []),
        (b"", b"", [("h-null", None)]),
        (b"k4", b"x" * 1000, []),
    ]


def build(codec_id, transactional=False):
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec_id, is_transactional=transactional,
        producer_id=PRODUCER_ID, producer_epoch=PRODUCER_EPOCH,
        base_sequence=BASE_SEQUENCE, batch_size=1 << 20)
    for i, (key, value, headers) in enumerate(records()):
        if b.append(i, BASE_TS + i * 1000, key, value, headers) is None:
            sys.exit("record %d did not fit" % i)
    return bytes(b.build())


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    os.makedirs(out, exist_ok=True)
    for name, cid in CODECS.items():
        with open(os.path.join(out, "kpython_%s.bin" % name), "wb") as f:
            f.write(build(cid))
    with open(os.path.join(out, "kpython_txn_gzip.bin"), "wb") as f:
        f.write(build(CODECS["gzip"], transactional=True))


if __name__ == "__main__":
    main()
