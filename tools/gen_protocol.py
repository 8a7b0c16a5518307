#!/usr/bin/env python3
"""Generate kafka_pg's table-driven Kafka protocol codec from Kafka's message definitions.

Reads Apache Kafka's official message definitions (JSON with // comments) and writes
two C files into --out:

  messages_gen.h   one C struct per (nested) struct type of every message, API key
                   constants, per-message version ranges, descriptor declarations
  messages_gen.c   the static descriptor tables that src/protocol/wire_decode.c and wire_encode.c interpret,
                   and kp_api_table[]

The generated files are committed, so building the extension needs no Python.  Run
`make protocol` (or this script) after changing the message definitions or this file.

Version plan
------------
The source is <messages>/messages-4.4/: every message of the Apache Kafka 4.4.0
release.  Generated are the requests and responses a broker listener serves
("listeners" includes "broker"), the consumer protocol's data schemas and the
headers.  Two adjustments:

  * versions below the 4.4 baseline (KIP-896 removed them) that librdkafka < 2.11
    requires to be advertised (Produce 0, see KAFKA-18659, and the others listed in
    OLD_VERSION_FLOOR) come from <messages>/messages-4.0-snapshot/.  For those
    versions the field layout is taken from the snapshot; a field known to both
    files must have the same type in both;
  * VERSION_CAP holds an API below a new version whose semantics kafka_pg does
    not implement yet, so that the generated codec (and what the dispatcher can
    advertise) never exceeds what the handlers do.

A version marked unstable ("latestVersionUnstable") is not supported: Kafka brokers do
not advertise it either unless unstable API versions are enabled.

Standard library only.
"""

import argparse
import json
import os
import re
import sys

# Lowest version of each API that must be supported because librdkafka < 2.11 only
# enables a feature if this exact version lies inside the advertised range
# (../shared/design/FACTS.md).  Where Kafka 4.3's file starts later, the older
# versions come from the 4.0 snapshot.
OLD_VERSION_FLOOR = {
    "Produce": 0,
    "Fetch": 4,
    "FindCoordinator": 0,
    "OffsetCommit": 2,
    "OffsetFetch": 1,
    "JoinGroup": 0,
    "SyncGroup": 0,
    "Heartbeat": 0,
    "LeaveGroup": 0,
    "InitProducerId": 0,
    "ListOffsets": 1,
}

# Versions added by Kafka 4.4 whose semantics are not implemented yet: the
# codec stops below them.  None at present (TxnOffsetCommit 6, topic ids
# instead of names, KIP-1319, is served since 2026-12-07).
VERSION_CAP = {
}

# Served by brokers, but only to other brokers: the share coordinator's
# persister (KIP-932's share-group state RPCs).  Not generated.
BROKER_TO_BROKER = {"InitializeShareGroupStateRequest", "ReadShareGroupStateRequest",
                    "WriteShareGroupStateRequest", "DeleteShareGroupStateRequest",
                    "ReadShareGroupStateSummaryRequest"}

# Non-request schemas that are generated: the consumer protocol's payloads
# (carried as bytes by the classic group APIs) and the headers.
DATA_SCHEMAS = ["ConsumerProtocolAssignment", "ConsumerProtocolSubscription",
                "RequestHeader", "ResponseHeader"]

# STRING fields whose value is bytes to the client rather than text: librdkafka
# commits binary offset metadata, and Kafka keeps any Java string, U+0000
# included.  In C they are KpBytes (flag KP_F_BINARY_STRING) so that NUL bytes
# survive; every other string is a NUL-terminated char *, and a NUL byte in one
# is reported by the decoder (KP_DECODE_EMBEDDED_NUL) for the dispatcher to
# refuse the request with a Kafka error.
BINARY_STRINGS = {
    ("OffsetCommitRequest", "CommittedMetadata"),
    ("TxnOffsetCommitRequest", "CommittedMetadata"),
    ("OffsetFetchResponse", "Metadata"),
}

PRIMITIVES = {
    # Kafka type: (C type, KP_T_ constant)
    "int8": ("int8", "KP_T_INT8"),
    "int16": ("int16", "KP_T_INT16"),
    "int32": ("int32", "KP_T_INT32"),
    "int64": ("int64", "KP_T_INT64"),
    "uint16": ("uint16", "KP_T_UINT16"),
    "uint32": ("uint32", "KP_T_UINT32"),
    "float64": ("double", "KP_T_FLOAT64"),
    "bool": ("bool", "KP_T_BOOL"),
    "string": ("char *", "KP_T_STRING"),
    "bytes": ("KpBytes", "KP_T_BYTES"),
    "records": ("KpBytes", "KP_T_RECORDS"),
    "uuid": ("KpUuid", "KP_T_UUID"),
}

MAX_VERSION = 63        # versions are kept as uint64 bit masks


# ---------------------------------------------------------------------------
# Reading the JSON


def strip_comments(text):
    """Remove // comments, but not a // inside a JSON string."""
    out = []
    i = 0
    in_string = False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_message(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(strip_comments(f.read()))


def parse_versions(spec, lo=0, hi=MAX_VERSION):
    """Turn "3+", "0-12", "5", "none" into a set of ints within [lo, hi]."""
    spec = spec.strip()
    if spec in ("", "none"):
        return set()
    if spec.endswith("+"):
        a, b = int(spec[:-1]), hi
    elif "-" in spec:
        a, b = (int(x) for x in spec.split("-"))
    else:
        a = b = int(spec)
    return set(range(max(a, lo), min(b, hi) + 1))


def mask(versions):
    m = 0
    for v in versions:
        assert 0 <= v <= MAX_VERSION
        m |= 1 << v
    return m


def snake(name):
    """Kafka's CamelCase field name to a C member name: ThrottleTimeMs -> throttle_time_ms."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


# ---------------------------------------------------------------------------
# Model: messages, structs and fields with version sets resolved


class Field:
    def __init__(self, spec, lo, hi):
        self.name = spec["name"]
        t = spec["type"]
        self.is_array = t.startswith("[]")
        self.elem = t[2:] if self.is_array else t
        self.is_struct = self.elem not in PRIMITIVES
        self.versions = parse_versions(spec["versions"], lo, hi)
        self.nullable = parse_versions(spec.get("nullableVersions", "none"), lo, hi)
        self.tagged = parse_versions(spec.get("taggedVersions", "none"), lo, hi)
        self.tag = spec.get("tag", -1)
        self.default = spec.get("default")
        # Only the request header's ClientId: a classic int16 string even in a flexible
        # header version, so that any broker can read any ApiVersions request.
        self.classic_string = spec.get("flexibleVersions", None) == "none"
        self.struct = None          # Struct, for struct / []struct
        self.binary_string = False  # (message, field) in BINARY_STRINGS
        self.spec = spec


class Struct:
    def __init__(self, c_name, kafka_name):
        self.c_name = c_name
        self.kafka_name = kafka_name
        self.fields = []


class Message:
    def __init__(self, spec, path, lo, hi, flexible):
        self.spec = spec
        self.path = path
        self.name = spec["name"]
        self.kind = spec["type"]                     # request / response / header / data
        self.api_key = spec.get("apiKey", -1)
        self.min_version = lo
        self.max_version = hi
        self.flexible = flexible                     # set of flexible versions
        self.structs = []                            # in dependency order, root last
        self.root = None


def version_range(spec):
    vs = parse_versions(spec["validVersions"])
    lo, hi = min(vs), max(vs)
    if spec.get("latestVersionUnstable"):
        hi -= 1
    return lo, hi


def build_message(spec, path, lo, hi):
    flexible = parse_versions(spec["flexibleVersions"], lo, hi)
    msg = Message(spec, path, lo, hi, flexible)
    registry = {}        # Kafka struct name -> field list spec (commonStructs + inline)
    for cs in spec.get("commonStructs", []):
        registry[cs["name"]] = cs["fields"]

    def collect(fields):
        for f in fields:
            t = f["type"]
            elem = t[2:] if t.startswith("[]") else t
            if "fields" in f:
                registry[elem] = f["fields"]
                collect(f["fields"])
    collect(spec["fields"])
    for cs in spec.get("commonStructs", []):
        collect(cs["fields"])

    built = {}

    def c_struct_name(kafka_name):
        base = msg.name
        if kafka_name.startswith(base):
            return "Kp" + kafka_name
        return "Kp" + base + kafka_name

    def build_struct(kafka_name, field_specs, c_name):
        st = Struct(c_name, kafka_name)
        for fs in field_specs:
            f = Field(fs, lo, hi)
            f.binary_string = (msg.name, f.name) in BINARY_STRINGS
            if not f.versions:
                continue            # only in versions we do not support
            if f.is_struct:
                if f.elem not in built:
                    if f.elem not in registry:
                        sys.exit("%s: struct type %s is not defined" % (msg.name, f.elem))
                    built[f.elem] = build_struct(f.elem, registry[f.elem],
                                                 c_struct_name(f.elem))
                f.struct = built[f.elem]
            st.fields.append(f)
        msg.structs.append(st)
        return st

    msg.root = build_struct(msg.name, spec["fields"], "Kp" + msg.name)
    return msg


def merge_old_versions(new, old, floor):
    """Extend message `new` down to version `floor` with the layout of `old`.

    Versions below new's baseline take each field's presence, nullability and tagging
    from `old`; versions from the baseline up keep new's.  A field present in both
    files must agree in type."""
    base = new.min_version
    old_vs = set(range(floor, base))
    assert old.min_version <= floor, "%s: snapshot lacks version %d" % (new.name, floor)
    assert old.flexible & old_vs == set() or True

    def merge_struct(ns, os_):
        by_name = {f.name: f for f in ns.fields}
        prev = None
        for of in os_.fields:
            o_vs = of.versions & old_vs
            nf = by_name.get(of.name)
            if nf is None:
                if not o_vs:
                    continue
                of.versions = o_vs
                of.nullable &= old_vs
                of.tagged &= old_vs
                idx = ns.fields.index(prev) + 1 if prev is not None else 0
                ns.fields.insert(idx, of)
                by_name[of.name] = of
                prev = of
                continue
            if (nf.is_array, nf.is_struct, nf.is_struct or nf.elem) != \
               (of.is_array, of.is_struct, of.is_struct or of.elem):
                sys.exit("%s.%s: type differs between %s and %s" %
                         (new.name, of.name, new.path, old.path))
            nf.versions |= o_vs
            nf.nullable |= of.nullable & old_vs
            nf.tagged |= of.tagged & old_vs
            if nf.is_struct and o_vs:
                merge_struct(nf.struct, of.struct)
            prev = nf

    if new.flexible & old_vs or old.flexible & old_vs:
        sys.exit("%s: old versions may not be flexible" % new.name)
    merge_struct(new.root, old.root)
    new.min_version = floor


def load_one(primary_dir, snapshot_dir, name, cap=None):
    """Load message `name` from messages-4.4/, extended down with the snapshot
    where OLD_VERSION_FLOOR asks; versions above `cap` (or VERSION_CAP) are left
    out."""
    path = os.path.join(primary_dir, name + ".json")
    spec = load_message(path)
    lo, hi = version_range(spec)
    api = re.sub(r"(Request|Response)$", "", spec["name"])
    if api in VERSION_CAP and spec["type"] in ("request", "response"):
        hi = min(hi, VERSION_CAP[api])
    if cap is not None:
        hi = min(hi, cap)
    floor = OLD_VERSION_FLOOR.get(api) if spec["type"] in ("request", "response") else None
    if floor is None or floor >= lo:
        return build_message(spec, path, lo, hi)
    old_path = os.path.join(snapshot_dir, name + ".json")
    old_spec = load_message(old_path)
    olo, ohi = version_range(old_spec)
    old = build_message(old_spec, old_path, olo, min(ohi, lo - 1))
    msg = build_message(spec, path, lo, hi)
    merge_old_versions(msg, old, floor)
    return msg


def served_by_broker(path):
    spec = load_message(path)
    return spec["type"] in ("request", "response") and "broker" in spec.get("listeners", [])


def load_all(root):
    primary_dir = os.path.join(root, "messages-4.4")
    snapshot_dir = os.path.join(root, "messages-4.0-snapshot")
    files = sorted(f[:-5] for f in os.listdir(primary_dir) if f.endswith(".json"))
    # A response has no "listeners": it goes with its request.
    requests = {n for n in files if n.endswith("Request") and n not in BROKER_TO_BROKER
                and served_by_broker(os.path.join(primary_dir, n + ".json"))}
    names = [n for n in files if n in requests
             or (n.endswith("Response") and n[:-len("Response")] + "Request" in requests)
             or n in DATA_SCHEMAS]
    messages = [load_one(primary_dir, snapshot_dir, n) for n in names]

    # A request and its response cover the same versions: where one of them has
    # an unstable latest version, both stop below it.
    apis = {}
    for m in messages:
        if m.kind in ("request", "response"):
            apis.setdefault(m.api_key, []).append(m)
    for key, pair in apis.items():
        hi = min(m.max_version for m in pair)
        for i, m in enumerate(messages):
            if m in pair and m.max_version > hi:
                messages[i] = load_one(primary_dir, snapshot_dir,
                                       os.path.basename(m.path)[:-5], hi)
    return messages


# ---------------------------------------------------------------------------
# Emitting C

HEADER_NOTE = ("/*\n * GENERATED by tools/gen_protocol.py from Kafka's message definitions"
               " \u2014 do not edit.\n *\n * Regenerate with `make protocol`.  See "
               "src/protocol/protocol.h for how these\n * structs and descriptors are used.\n */\n")


def c_member_type(f):
    if f.is_struct:
        base = f.struct.c_name
        if f.is_array:
            return base + " *"
        # A nullable struct is a pointer (NULL = null); otherwise embedded.
        return base + " *" if f.nullable else base + " "
    ctype = "KpBytes" if f.binary_string else PRIMITIVES[f.elem][0]
    if f.is_array:
        return ctype + ("*" if ctype.endswith("*") else " *")
    return ctype if ctype.endswith("*") else ctype + " "


def member_names(st):
    seen = set()
    out = []
    for f in st.fields:
        m = snake(f.name)
        names = [m] + (["n_" + m] if f.is_array else [])
        for n in names:
            if n in seen:
                sys.exit("%s: duplicate member %s" % (st.c_name, n))
            seen.add(n)
        out.append(m)
    return out


def versions_comment(f, msg):
    def fmt(vs):
        if not vs:
            return "none"
        vs = sorted(vs)
        runs = []
        start = prev = vs[0]
        for v in vs[1:] + [None]:
            if v is not None and v == prev + 1:
                prev = v
                continue
            runs.append("%d" % start if start == prev else "%d-%d" % (start, prev))
            if v is not None:
                start = prev = v
        return ",".join(runs)
    s = "v" + fmt(f.versions)
    if f.nullable:
        s += ", nullable v" + fmt(f.nullable)
    if f.tagged:
        s += ", tag %d v%s" % (f.tag, fmt(f.tagged))
    if f.default is not None:
        d = f.default
        s += ", default %s" % (json.dumps(d) if f.elem == "string" and d != "null" else d)
    return s


def api_name(msg):
    return re.sub(r"(Request|Response)$", "", msg.name)


def api_const(name):
    return "KP_API_" + snake(name).upper()


def emit_header(messages, out):
    w = out.append
    w(HEADER_NOTE)
    w("#ifndef KP_MESSAGES_GEN_H\n#define KP_MESSAGES_GEN_H\n\n")
    w("/* Included by protocol.h after KpBytes, KpUuid and the descriptor types. */\n\n")

    apis = {}
    for m in messages:
        if m.kind in ("request", "response"):
            apis.setdefault(m.api_key, {})[m.kind] = m
    w("/* API keys */\n")
    for key in sorted(apis):
        w("#define %-40s %d\n" % (api_const(api_name(apis[key]["request"])), key))
    w("#define KP_API_KEY_MAX %d\n\n" % max(apis))
    w("/* Versions this codec supports, per API (see tools/gen_protocol.py) */\n")
    for key in sorted(apis):
        req, resp = apis[key]["request"], apis[key]["response"]
        lo = max(req.min_version, resp.min_version)
        hi = min(req.max_version, resp.max_version)
        c = api_const(api_name(req))
        w("#define %-40s %d\n" % (c + "_MIN_VERSION", lo))
        w("#define %-40s %d\n" % (c + "_MAX_VERSION", hi))
    w("\n")

    for m in messages:
        w("/* ---- %s (%s, versions %d-%d%s) ---- */\n\n" % (
            m.name, m.kind, m.min_version, m.max_version,
            ", flexible %d+" % min(m.flexible) if m.flexible else ""))
        for st in m.structs:
            names = member_names(st)
            w("typedef struct %s\n{\n" % st.c_name)
            if not st.fields:
                w("\tchar\t\tkp_unused;\t\t/* no fields at any supported version */\n")
            for f, n in zip(st.fields, names):
                if f.is_array:
                    w("\tint32\tn_%s;\t\t/* element count; -1 = null array */\n" % n)
                t = c_member_type(f)
                base_type = t.rstrip(" *")
                star = t[len(base_type):].replace(" ", "")
                w("\t%s\t%s%s;\t\t/* %s */\n" % (base_type, star, n,
                                                versions_comment(f, m)))
            w("} %s;\n\n" % st.c_name)
        w("extern const KpMessageDesc kp_%s_desc;\n\n" % m.name)
    w("extern const KpApiEntry kp_api_table[];\nextern const int kp_api_table_len;\n")
    w("extern const KpMessageDesc *const kp_all_messages[];\nextern const int kp_all_messages_len;\n\n")
    w("#endif\t\t\t\t\t\t\t/* KP_MESSAGES_GEN_H */\n")


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default_init(f):
    """The default-value initialisers of a field descriptor."""
    d = f.default
    if isinstance(d, bool):
        d = "true" if d else "false"
    elif d is not None:
        d = str(d)
    if f.is_array or f.is_struct:
        # arrays: empty, or null if the default says so; structs: all defaults / null
        return ".default_null = %s" % ("true" if d == "null" else "false")
    t = f.elem
    if t in ("string",):
        if d == "null":
            return ".default_null = true"
        return ".default_string = %s" % c_string(d if d is not None else "")
    if t in ("bytes", "records"):
        return ".default_null = %s" % ("true" if d == "null" else "false")
    if t == "bool":
        return ".default_int = %d" % (1 if d == "true" else 0)
    if t == "float64":
        return ".default_float = %s" % (repr(float(d)) if d is not None else "0.0")
    if t == "uuid":
        if d not in (None, "", "AAAAAAAAAAAAAAAAAAAAAA"):
            sys.exit("%s: uuid default %s unsupported" % (f.name, d))
        return ".default_int = 0"
    if d is None or d == "":
        return ".default_int = 0"
    v = int(d, 16) if d.lower().startswith(("0x", "-0x")) else int(d)
    if t == "int64" and v == -(1 << 63):
        return ".default_int = PG_INT64_MIN"
    return ".default_int = INT64CONST(%d)" % v


def emit_source(messages, out):
    w = out.append
    w(HEADER_NOTE)
    w('#include "postgres.h"\n\n#include <stddef.h>\n\n#include "protocol/protocol.h"\n\n')
    for m in messages:
        flex = "UINT64CONST(0x%x)" % mask(m.flexible)
        for st in m.structs:
            names = member_names(st)
            if st.fields:
                w("static const KpFieldDesc %s_fields[] = {\n" % st.c_name)
                for f, n in zip(st.fields, names):
                    t = "KP_T_STRUCT" if f.is_struct else PRIMITIVES[f.elem][1]
                    flags = []
                    if f.is_array:
                        flags.append("KP_F_ARRAY")
                    if f.classic_string:
                        flags.append("KP_F_CLASSIC_STRING")
                    if f.binary_string:
                        flags.append("KP_F_BINARY_STRING")
                    if f.is_struct and not f.is_array and f.nullable:
                        flags.append("KP_F_POINTER")
                    parts = [
                        ".name = %s" % c_string(f.name),
                        ".type = %s" % t,
                        ".flags = %s" % ("|".join(flags) if flags else "0"),
                        ".offset = offsetof(%s, %s)" % (st.c_name, n),
                    ]
                    if f.is_array:
                        parts.append(".count_offset = offsetof(%s, n_%s)" % (st.c_name, n))
                    parts.append(".versions = UINT64CONST(0x%x)" % mask(f.versions))
                    if f.nullable:
                        parts.append(".nullable_versions = UINT64CONST(0x%x)" % mask(f.nullable))
                    if f.tagged:
                        parts.append(".tagged_versions = UINT64CONST(0x%x)" % mask(f.tagged))
                        parts.append(".tag = %d" % f.tag)
                    else:
                        parts.append(".tag = -1")
                    if f.is_struct:
                        parts.append(".struct_desc = &%s_desc" % f.struct.c_name)
                    parts.append(default_init(f))
                    w("\t{" + ", ".join(parts) + "},\n")
                w("};\n\n")
                tagged = sorted((f.tag, i) for i, f in enumerate(st.fields) if f.tagged)
                if tagged:
                    w("static const uint8 %s_tag_order[] = {%s};\n\n" % (
                        st.c_name, ", ".join(str(i) for _, i in tagged)))
            else:
                tagged = []
            w("static const KpStructDesc %s_desc = {\n" % st.c_name)
            w("\t.name = %s,\n\t.size = sizeof(%s),\n\t.nfields = %d,\n" % (
                c_string(st.kafka_name), st.c_name, len(st.fields)))
            w("\t.fields = %s,\n" % ("%s_fields" % st.c_name if st.fields else "NULL"))
            w("\t.ntagged = %d,\n\t.tag_order = %s\n};\n\n" % (
                len(tagged), "%s_tag_order" % st.c_name if tagged else "NULL"))
        w("const KpMessageDesc kp_%s_desc = {\n" % m.name)
        w("\t.name = %s,\n\t.api_key = %d,\n\t.min_version = %d,\n\t.max_version = %d,\n" % (
            c_string(m.name), m.api_key, m.min_version, m.max_version))
        w("\t.flexible_versions = %s,\n\t.root = &%s_desc\n};\n\n" % (flex, m.root.c_name))

    apis = {}
    for m in messages:
        if m.kind in ("request", "response"):
            apis.setdefault(m.api_key, {})[m.kind] = m
    w("/* Every API the codec knows, ordered by API key. */\n")
    w("const KpApiEntry kp_api_table[] = {\n")
    for key in sorted(apis):
        req, resp = apis[key]["request"], apis[key]["response"]
        if mask(req.flexible) != mask(resp.flexible):
            sys.exit("%s: request and response flexible versions differ" % req.name)
        flex_min = min(req.flexible) if req.flexible else -1
        c = api_const(api_name(req))
        w("\t{%d, %s, &kp_%s_desc, &kp_%s_desc, %d, %s_MIN_VERSION, %s_MAX_VERSION},\n" % (
            key, c_string(api_name(req)), req.name, resp.name, flex_min, c, c))
    w("};\n\nconst int kp_api_table_len = lengthof(kp_api_table);\n\n")
    w("/* Every message descriptor, requests, responses, headers and data schemas. */\n")
    w("const KpMessageDesc *const kp_all_messages[] = {\n")
    for m in messages:
        w("\t&kp_%s_desc,\n" % m.name)
    w("};\n\nconst int kp_all_messages_len = lengthof(kp_all_messages);\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", default="../shared/kafka-protocol",
                    help="folder holding messages-4.4/ and messages-4.0-snapshot/")
    ap.add_argument("--out", default="src/protocol", help="output folder")
    args = ap.parse_args()
    messages = load_all(args.messages)
    for name, emit in (("messages_gen.h", emit_header), ("messages_gen.c", emit_source)):
        out = []
        emit(messages, out)
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write("".join(out))
    print("gen_protocol: %d messages -> %s" % (len(messages), args.out))


if __name__ == "__main__":
    main()
