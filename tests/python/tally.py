"""Pass/fail counting shared by the script-style checks in tests/python: each check prints
"FAIL: ..." when it fails, and the script ends with its own summary line and exit status."""


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
