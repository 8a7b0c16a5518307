"""What the wire tests share: TAP-style checks and the closing "N passed, M failed" line.

    from tap import check, finish
    check("a thing holds", ok, "(detail shown when it does not)")
    finish()          # prints the counts and exits 1 if any check failed
"""
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


def finish():
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
