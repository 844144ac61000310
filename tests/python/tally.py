"""Pass/fail counting shared by the script-style checks in tests/python: each check prints
"FAIL: ..." when it fails, and the script ends with its own summary line and exit status.

skip() is the one way a test script says it cannot run (ctest: SKIP_RETURN_CODE 77). Under
CI (the environment variable CI set to anything but "", 0, false or no) a skip is a failure
instead: CI has torch, PIL, cv2 and ../shared, so a skip there means a broken fixture path
or import, and must not pass as "100% tests passed"."""
import os
import sys

SKIP_EXIT = 77


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip(reason):
    """Ends the script: exit 77 (skipped), or under CI exit 1 with a FAIL line."""
    if in_ci():
        print(f"FAIL: would skip ({reason}), but CI={os.environ['CI']}: a skip under CI is a failure", flush=True)
        sys.exit(1)
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP_EXIT)


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        ok = bool(ok)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", flush=True)
        return ok
