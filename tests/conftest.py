"""pytest setup of the Python tests (tests/e2e, tests/oracle):

- tests/pylib (harness, tally, safetensors_io, the reference implementations) is importable
  from every test file.
- `--shared`: runs only the tests marked `shared` (those that need ../shared); without it,
  only the others. ctest has one entry for each half (e2e_cli and e2e_cli_photos, ...).
- Skips: a test that cannot run here (no ../shared, no torch) calls pytest.skip (or
  harness.need). Under CI=true every skip is turned into a failure: CI has all of them, so a
  skip there means a broken path or import, and must not pass as "100% tests passed".
- Exit status 77 (ctest's SKIP_RETURN_CODE) when something was skipped and nothing failed,
  so that ctest lists the file as skipped, not passed.
"""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE / "pylib") not in sys.path:
    sys.path.insert(0, str(HERE / "pylib"))

import harness  # noqa: E402

SKIP_EXIT = 77


def pytest_addoption(parser):
    parser.addoption("--shared", action="store_true",
                     help="run only the tests marked shared (they need ../shared, VITATTN_SHARED)")


def pytest_configure(config):
    harness.USE_SHARED = config.getoption("--shared")


def pytest_collection_modifyitems(config, items):
    shared = config.getoption("--shared")
    keep, drop = [], []
    for item in items:
        (keep if (item.get_closest_marker("shared") is not None) == shared else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _fail_skip_under_ci(report):
    if report.skipped and harness.in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"would skip ({reason}), but CI={harness.os.environ['CI']}: a skip under CI is a failure"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter is not None and reporter.stats.get("skipped")
    # NO_TESTS_COLLECTED: a whole file skipped at import (no torch, no ../shared).
    if skipped and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = SKIP_EXIT
