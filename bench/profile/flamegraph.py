#!/usr/bin/env python3
"""bench/profile/flamegraph.py TITLE < perf-script-output > graph.svg: a flame graph of `perf script`.

Folds the call stacks of `perf record -g` samples (as `perf script` prints them: a header line per
sample, then one frame per line, innermost first, then a blank line) and draws them as an SVG
flame graph: the root at the bottom, a callee above its caller, widths proportional to samples;
hovering a box shows its function, samples and share.  Also prints the 25 heaviest frames by
inclusive share on stderr.  Written for this project (the idea is Brendan Gregg's FlameGraph).
"""
import html
import re
import sys
from collections import defaultdict

title = sys.argv[1] if len(sys.argv) > 1 else "flame graph"
frame_re = re.compile(r"^\s*[0-9a-f]+\s+(.+?)\s+\((.*)\)\s*$")

stacks = defaultdict(int)
cur = []
comm = None


def flush():
    global cur
    if comm is not None and cur:
        stacks[tuple([comm] + list(reversed(cur)))] += 1
    cur = []


for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush()
        comm = None
        continue
    if not line.startswith((" ", "\t")):
        flush()
        comm = line.split()[0]
        continue
    m = frame_re.match(line)
    if m:
        sym = m.group(1)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        if sym == "[unknown]":
            sym = "[%s]" % m.group(2).rsplit("/", 1)[-1]
        cur.append(sym)
flush()

total = sum(stacks.values())
if total == 0:
    sys.exit("flamegraph: no samples with call stacks in the input")


class Node:
    __slots__ = ("name", "count", "kids")

    def __init__(self, name):
        self.name, self.count, self.kids = name, 0, {}


root = Node("all")
for st, n in stacks.items():
    node = root
    node.count += n
    for f in st:
        node = node.kids.setdefault(f, Node(f))
        node.count += n

# inclusive share per function (counted once per stack)
incl = defaultdict(int)
for st, n in stacks.items():
    for f in set(st):
        incl[f] += n
for f, n in sorted(incl.items(), key=lambda kv: -kv[1])[:25]:
    print("%5.1f%%  %s" % (100.0 * n / total, f), file=sys.stderr)

W, H, top = 1200, 16, 40


def depth(n):
    return 1 + max((depth(k) for k in n.kids.values()), default=0)


D = depth(root)
height = top + D * H + 20
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">' % (W, height),
       '<rect width="100%%" height="100%%" fill="#f8f8f0"/><text x="10" y="20" font-size="14">%s (%d samples)</text>'
       % (html.escape(title), total)]


def color(name):
    h = sum(map(ord, name)) % 60
    return "rgb(%d,%d,%d)" % (205 + h % 50, 80 + h * 2, 40 + h % 30)


def draw(n, x, level):
    w = W * n.count / total
    if w < 0.3:
        return
    y = height - 20 - (level + 1) * H
    label = html.escape(n.name)
    out.append('<g><title>%s (%d samples, %.2f%%)</title><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="#fff" stroke-width="0.5"/>'
               % (label, n.count, 100.0 * n.count / total, x, y, w, H - 1, color(n.name)))
    chars = int(w / 7)
    if chars >= 3:
        t = n.name if len(n.name) <= chars else n.name[:chars - 2] + ".."
        out.append('<text x="%.1f" y="%d">%s</text>' % (x + 2, y + H - 4, html.escape(t)))
    out.append("</g>")
    for k in sorted(n.kids.values(), key=lambda k: k.name):
        draw(k, x, level + 1)
        x += W * k.count / total


draw(root, 0, 0)
out.append("</svg>")
print("\n".join(out))
