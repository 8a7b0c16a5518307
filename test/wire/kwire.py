"""The Kafka wire's primitive types for the raw-protocol tests of test/wire (conformance.py,
share_wake.py): encoders of INT8..INT64, (COMPACT_)(NULLABLE_)STRING and ARRAY, UNSIGNED_VARINT and
empty tagged fields, and a Reader that decodes them from a response body; and the Metadata v4
request that several of them send (metadata_v4)."""
import struct


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


TAGS = uvarint(0)


def string(s):
    """A (non-compact) NULLABLE_STRING."""
    if s is None:
        return i16(-1)
    b = s if isinstance(s, bytes) else s.encode()
    return i16(len(b)) + b


def cstring(s):
    """COMPACT_(NULLABLE_)STRING."""
    if s is None:
        return uvarint(0)
    b = s if isinstance(s, bytes) else s.encode()
    return uvarint(len(b) + 1) + b


def array(items):
    """ARRAY; None is the null array."""
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(items)


def carray(items):
    """COMPACT_ARRAY; None is the null array."""
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


def nbytes(b):
    """NULLABLE_BYTES."""
    return i32(-1) if b is None else i32(len(b)) + b


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def take(self, n):
        b = self.d[self.p:self.p + n]
        if len(b) != n:
            raise ValueError("truncated response")
        self.p += n
        return b

    def i8(self): return struct.unpack(">b", self.take(1))[0]
    def i16(self): return struct.unpack(">h", self.take(2))[0]
    def i32(self): return struct.unpack(">i", self.take(4))[0]
    def i64(self): return struct.unpack(">q", self.take(8))[0]
    def uuid(self): return self.take(16)

    def uvarint(self):
        n = shift = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7f) << shift
            if not b & 0x80:
                return n
            shift += 7

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n)

    def nbytes(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def cstring(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1)

    def cbytes(self):
        return self.cstring()

    def array(self, fn):
        n = self.i32()
        return None if n < 0 else [fn() for _ in range(n)]

    def carray(self, fn):
        n = self.uvarint()
        return None if n == 0 else [fn() for _ in range(n - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def metadata_v4(c, name, auto_create):
    """Metadata v4 of one topic, through c.call(api_key, version, body) (a connection of the
    caller's that answers a Reader or None): (error, is_internal, partition count), or None."""
    r = c.call(3, 4, array([string(name)]) + i8(1 if auto_create else 0))
    if r is None:
        return None
    r.i32()
    r.array(lambda: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()

    def topic():
        err, _, internal = r.i16(), r.string(), r.i8()
        parts = r.array(lambda: (r.i16(), r.i32(), r.i32(), r.array(r.i32), r.array(r.i32)))
        return err, internal, len(parts or [])
    return r.array(topic)[0]


def describe_producers(c, topic, partition):
    """DescribeProducers v0 (flexible) of one partition, through c.call_flex(api_key, version, body):
    {producer id: (epoch, last sequence, current transaction start offset)}."""
    r = c.call_flex(61, 0, carray([cstring(topic) + carray([i32(partition)]) + TAGS]) + TAGS)
    r.i32()
    out = {}
    for _ in range(r.uvarint() - 1):
        r.cstring()
        for _ in range(r.uvarint() - 1):
            r.i32(), r.i16(), r.cstring()
            for _ in range(r.uvarint() - 1):
                pid, epoch, seq, _ts, _coord, start = r.i64(), r.i32(), r.i32(), r.i64(), r.i32(), r.i64()
                r.tags()
                out[pid] = (epoch, seq, start)
            r.tags()
        r.tags()
    return out
