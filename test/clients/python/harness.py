"""A very small test runner shared by the Python client tests (no pytest, so that Debian's
/usr/bin/python3 and the PyPI virtualenvs run the same files with nothing else installed).

    @test                      a test
    @test(tags=("groups",))    needs consumer groups: KAFKA_TEST_GROUPS=0 skips it
    @test(tags=("txn",))       needs transactions: runs only with KAFKA_TEST_TXN=1
    skip("why")                inside a test: this client version lacks the feature

main(title) runs the tests named on the command line (all by default), each with a time limit,
and prints "N passed, M failed" (skips on the line before) as its last line.
"""
import os
import signal
import sys
import time
import traceback
import uuid

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
RUN_ID = os.environ.get("KAFKA_TEST_RUN_ID") or uuid.uuid4().hex[:8]
TEST_TIMEOUT = int(os.environ.get("KAFKA_TEST_TIMEOUT", "90"))
TAG_ENV = {"groups": "KAFKA_TEST_GROUPS", "txn": "KAFKA_TEST_TXN"}
TAG_DEFAULT = {"groups": "1", "txn": "0"}

_tests = []


def load_known_failures(client_id, path=None):
    """{test name: reason} for this client from known-failures beside this file: lines of
    '<client glob> <test name> <reason>'. Known failures of kafka_pg print XFAIL and are not counted
    as failed (KAFKA_TEST_STRICT=1 counts them); one that passes prints XPASS, a hint to remove it."""
    import fnmatch
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "known-failures")
    out = {}
    if os.environ.get("KAFKA_TEST_STRICT", "0") == "1" or not os.path.exists(path):
        return out
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) >= 2 and fnmatch.fnmatch(client_id, parts[0]):
            out[parts[1]] = parts[2] if len(parts) > 2 else ""
    return out


class Skip(Exception):
    pass


class Timeout(Exception):
    pass


def skip(why):
    raise Skip(why)


def test(fn=None, tags=()):
    def deco(f):
        _tests.append((f.__name__.removeprefix("test_"), f, tuple(tags)))
        return f
    return deco(fn) if fn is not None else deco


_counter = [0]


def topic_name(prefix):
    """A topic name unique to this run (Kafka topic names: [a-zA-Z0-9._-], at most 249)."""
    _counter[0] += 1
    return f"{prefix}-{RUN_ID}-{_counter[0]}"


def eq(what, expected, actual):
    if expected != actual:
        raise AssertionError(f"{what}:\n      expected {expected!r}\n      actual   {actual!r}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def wait_until(what, fn, timeout=20.0, interval=0.2):
    """Call fn until it returns a true value; return that value or fail after timeout seconds."""
    deadline = time.time() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
            last = v
        except Exception as e:  # noqa: BLE001 - report the last error
            last = e
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def _alarm(signum, frame):
    raise Timeout(f"test took longer than {TEST_TIMEOUT}s")


def main(title, on_failure=None, client_id=None):
    """on_failure: called after a failed test (e.g. to drop a shared client a failure may have broken)."""
    names = sys.argv[1:]
    selected = [t for t in _tests if not names or t[0] in names]
    print(f"{title} against {BOOTSTRAP}", flush=True)
    passed = failed = skipped = xfailed = 0
    failures = []
    known = load_known_failures(client_id) if client_id else {}
    signal.signal(signal.SIGALRM, _alarm)
    for name, fn, tags in selected:
        off = [t for t in tags if os.environ.get(TAG_ENV[t], TAG_DEFAULT[t]) != "1"]
        if off:
            print(f"SKIP {name} (needs {', '.join(off)}; {' '.join(TAG_ENV[t] + '=1' for t in off)} runs it)",
                  flush=True)
            skipped += 1
            continue
        start = time.time()
        signal.alarm(TEST_TIMEOUT)
        try:
            fn()
            signal.alarm(0)
            print(f"ok   {name} ({time.time() - start:.1f}s)", flush=True)
            if name in known:
                print(f"XPASS {name}: listed in known-failures for {client_id}; remove the line", flush=True)
            passed += 1
        except Skip as e:
            signal.alarm(0)
            print(f"SKIP {name} ({e})", flush=True)
            skipped += 1
        except BaseException as e:  # noqa: BLE001
            signal.alarm(0)
            if isinstance(e, KeyboardInterrupt):
                raise
            tag = "XFAIL" if name in known else "FAIL"
            print(f"{tag} {name} ({time.time() - start:.1f}s)", flush=True)
            if name in known:
                print(f"    known failure: {known[name]}", flush=True)
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            # the assertion message and the test's own frames, not the harness
            print("    " + "".join(tb[-3:]).rstrip().replace("\n", "\n    "), flush=True)
            if name in known:
                xfailed += 1
            else:
                failed += 1
                failures.append(name)
            if on_failure is not None:
                try:
                    on_failure()
                except Exception:  # noqa: BLE001
                    pass
    if failures:
        print("failed: " + " ".join(failures))
    if skipped:
        print(f"skipped: {skipped}")
    if xfailed:
        print(f"known failures (XFAIL, not counted): {xfailed}")
    print(f"{passed} passed, {failed} failed", flush=True)
    # librdkafka handles can hang interpreter shutdown when a broker misbehaves
    sys.stdout.flush()
    os._exit(1 if failed else 0)
