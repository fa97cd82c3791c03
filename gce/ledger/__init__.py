"""The online accountant: a privacy filter that knows the membership constraints, on a ledger.

* :mod:`gce.ledger.filters`: the admission rules valid for adaptively chosen parameters (basic
  composition, Renyi at fixed orders, zCDP, GDP through sum mu^2), one statistic each per invocation.
* :mod:`gce.ledger.worst`: the filter statistic, the maximum over allowed membership sets of the
  per-database sums, as a certified bracket kept up to date incrementally.
* :mod:`gce.ledger.store`: the ledger itself, in SQLite; :mod:`gce.ledger.postgres`: on a PostgreSQL server.
* :mod:`gce.ledger.accountant`: :class:`Accountant` (check, spend, status, history, offline).
"""

from .accountant import Accountant, Decision, Entry, Status, Verification
from .chain import DamagedLedgerError
from .filters import FILTERS
from .store import LedgerError

__all__ = ["Accountant", "Decision", "Entry", "Status", "Verification", "FILTERS", "LedgerError", "DamagedLedgerError"]
