"""Check counting for the tests that make many checks in one go (a cross-check over many
models and images): each check prints "FAIL: ..." when it fails and the run goes on, so one
failure does not hide the next; a test then ends with `assert_clean()` (or runs inside
`with T.section(...)`), which fails it with the list of what failed.

skip() is for scripts run on their own (exit 77, ctest's SKIP_RETURN_CODE; under CI=true
exit 1, since CI has torch, PIL, cv2 and ../shared and a skip there means a broken fixture
path or import). Under pytest it is pytest.skip, and tests/conftest.py applies the CI rule."""
import contextlib
import os
import sys

SKIP_EXIT = 77


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip(reason):
    """Ends the script: exit 77 (skipped), or under CI exit 1 with a FAIL line. Under pytest,
    skips the test (or the module, at import)."""
    if "pytest" in sys.modules:
        import pytest
        pytest.skip(reason, allow_module_level=True)
    if in_ci():
        print(f"FAIL: would skip ({reason}), but CI={os.environ['CI']}: a skip under CI is a failure", flush=True)
        sys.exit(1)
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP_EXIT)


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, ok, what):
        ok = bool(ok)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(str(what))
            print(f"FAIL: {what}", flush=True)
        return ok

    def assert_clean(self, since=0, label="checks"):
        """Fails (AssertionError) if a check failed after the first `since` failures."""
        new = self.failures[since:]
        print(f"{label}: {self.passed} passed, {self.failed} failed so far", flush=True)
        assert not new, f"{len(new)} failed:\n" + "\n".join(f"  {w}" for w in new[:50])

    @contextlib.contextmanager
    def section(self, label):
        """The checks made inside must all pass: fails the test at the end otherwise."""
        since = len(self.failures)
        yield self
        self.assert_clean(since, label)
