import gc
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collectreport(report):
    """What collecting makes (modules, parameters, test items) lives for the whole run: each collector's
    objects leave the garbage collector's generations (``gc.freeze``), so the full collections that follow
    stop re-traversing them. Measured on the default run: garbage collection took 1.7 s while collecting,
    0.2 s with this."""
    gc.freeze()


def pytest_collection_finish(session):
    """The same for the rest of the collection: garbage collection took 1.5 s during the default run's
    tests, 0.55 s with both hooks."""
    gc.freeze()


def pytest_sessionfinish(session, exitstatus):
    """Frozen objects back to the collector before the interpreter exits: extension modules that count
    their live objects at exit (DuckDB's nanobind) would otherwise report them as leaked."""
    gc.unfreeze()
    gc.collect()
