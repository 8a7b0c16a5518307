#!/usr/bin/python3
"""Decode, with kafka-python, the batches test_codec.c built with our codec.

Run by test_codec (argument: the folder it wrote c_*.bin into).  Checks the
records of make_fixtures.py's record set in every codec, and the COMMIT
control batch.  Exits nonzero, loudly, on any difference, and also when
kafka-python or one of its codec modules is missing: a check that cannot
run must not look like a pass.
"""
import os
import struct
import sys

try:
    from kafka import codec as kcodec
    from kafka.record.default_records import DefaultRecordBatch
except ImportError as e:
    sys.exit("check_c_batches.py: FAIL: kafka-python not importable (%s); "
             "install python3-kafka" % e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import records, BASE_TS  # noqa: E402

AVAILABLE = {"none": True, "gzip": kcodec.has_gzip(),
             "snappy": kcodec.has_snappy(), "lz4": kcodec.has_lz4(),
             "zstd": kcodec.has_zstd()}


def check(path, codec):
    with open(path, "rb") as f:
        data = f.read()
    batch = DefaultRecordBatch(bytearray(data))
    if not batch.validate_crc():
        return "CRC"
    if batch.compression_type != {"none": 0, "gzip": 1, "snappy": 2,
                                  "lz4": 3, "zstd": 4}[codec]:
        return "compression type %d" % batch.compression_type
    got = list(batch)
    want = records()
    if len(got) != len(want):
        return "%d records, want %d" % (len(got), len(want))
    for i, (rec, (key, value, headers)) in enumerate(zip(got, want)):
        if rec.offset != i or rec.timestamp != BASE_TS + i * 1000:
            return "record %d offset/timestamp" % i
        if rec.key != key or rec.value != value:
            return "record %d key/value %r %r" % (i, rec.key, rec.value)
        if [(k, v) for k, v in rec.headers] != headers:
            return "record %d headers %r" % (i, rec.headers)
    return None


def check_control(path):
    with open(path, "rb") as f:
        batch = DefaultRecordBatch(bytearray(f.read()))
    if not batch.validate_crc() or not batch.is_control_batch \
            or not batch.is_transactional:
        return "control/transactional flags or CRC"
    recs = list(batch)
    if len(recs) != 1:
        return "%d records" % len(recs)
    key, value = bytes(recs[0].key), bytes(recs[0].value)
    if struct.unpack(">hh", key) != (0, 1) \
            or struct.unpack(">hi", value) != (0, 9):
        return "key %r value %r" % (key, value)
    return None


def main():
    folder = sys.argv[1]
    failed = 0
    for codec, ok in AVAILABLE.items():
        if not ok:
            print("check_c_batches.py: FAIL: kafka-python cannot decode %s "
                  "(python module missing: python3-lz4 / python3-snappy / "
                  "python3-zstandard)" % codec)
            failed += 1
            continue
        err = check(os.path.join(folder, "c_%s.bin" % codec), codec)
        print("check_c_batches.py: %s: %s" % (codec, err and "FAIL " + err or "ok"))
        failed += err is not None
    err = check_control(os.path.join(folder, "c_control_commit.bin"))
    print("check_c_batches.py: control: %s" % (err and "FAIL " + err or "ok"))
    failed += err is not None
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
