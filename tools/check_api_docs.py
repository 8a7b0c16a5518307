#!/usr/bin/env python3
"""Check that docs/wire-protocol.md's API table says what the listener serves.

The listener serves the APIs that src/listener/dispatch.c has a handler for, at
the version ranges the generated codec declares (src/protocol/messages_gen.h,
KP_API_<NAME>_MIN/MAX_VERSION).  The docs table has one row per served API:
"| key | Name | min–max |" (a single version may be written "v"; text after the
range, such as "(refused, see below)", is allowed).  Exits 1 and says what
differs: an API served but not documented, documented but not served, or a
range that is not the served one.

    tools/check_api_docs.py            (run by `make check-protocol`)
"""
import os
import re
import sys

top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def read(path):
    with open(os.path.join(top, path), encoding="utf-8") as f:
        return f.read()


gen_h = read("src/protocol/messages_gen.h")
versions = dict(re.findall(r"#define (KP_API_\w+_(?:MIN|MAX)_VERSION)\s+(\d+)", gen_h))
keys = dict((name, int(key)) for name, key in re.findall(r"#define (KP_API_\w+)\s+(\d+)\b", gen_h)
            if not name.endswith("_VERSION"))
names = dict(re.findall(r'\{(\d+), "(\w+)", &kp_\w+_desc', read("src/protocol/messages_gen.c")))

served = {}
for const in re.findall(r"\{(KP_API_\w+), kp_handle_\w+\}", read("src/listener/dispatch.c")):
    key = keys[const]
    served[key] = (int(versions[const + "_MIN_VERSION"]), int(versions[const + "_MAX_VERSION"]))

documented = {}
for key, name, rng in re.findall(r"^\| (\d+) \| (\w+) \| ([^|]*)\|", read("docs/wire-protocol.md"), re.M):
    m = re.match(r"\s*(\d+)(?:\s*[–-]\s*(\d+))?", rng)
    if not m:
        continue
    lo = int(m.group(1))
    documented[int(key)] = (name, lo, int(m.group(2)) if m.group(2) else lo)

problems = []
for key, (lo, hi) in sorted(served.items()):
    if key not in documented:
        problems.append(f"API {key} {names.get(str(key), '?')} is served at {lo}–{hi} but not in docs/wire-protocol.md")
    elif documented[key][1:] != (lo, hi):
        d = documented[key]
        problems.append(f"API {key} {d[0]}: docs say {d[1]}–{d[2]}, the listener serves {lo}–{hi}")
for key, d in sorted(documented.items()):
    if key not in served:
        problems.append(f"API {key} {d[0]} is in docs/wire-protocol.md but the listener has no handler for it")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"docs/wire-protocol.md lists the {len(served)} APIs the listener serves, at their versions")
