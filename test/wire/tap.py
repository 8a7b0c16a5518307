"""What the wire tests share: TAP-style checks and the closing "N passed, M failed" line.

    from tap import check, finish
    check("a thing holds", ok, "(detail shown when it does not)")
    server_log()      # the server's log, where test/run-tests names it ($KP_SERVER_LOG), or None
    finish()          # prints the counts and exits 1 if any check failed
"""
import os
import sys

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"not ok - {name} {detail}")
    return ok


def server_log():
    """The text of the server's log ($KP_SERVER_LOG, which test/run-tests sets), or None."""
    path = os.environ.get("KP_SERVER_LOG")
    if not path:
        return None
    with open(path, errors="replace") as f:
        return f.read()


def finish():
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
