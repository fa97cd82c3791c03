"""Membership constraints: which sets of databases can hold the target's record.

The constraints define the allowed membership sets B~ (001, Sec. V-A: the
supports of the allowed b-vectors); the empty set is always allowed and
constraints intersect. Each kind is a small frozen record
(:mod:`gce.constraints.kinds`) with one interface (:mod:`gce.constraints.base`):
``validate(n)``, ``satisfied(members)`` and ``compile(n)`` into linear
inequalities over binary variables (:mod:`gce.constraints.linear`), which is
what the solvers consume. :class:`ConstraintSet`
(:mod:`gce.constraints.constraint_set`) validates a whole set against ``n``
and gives its structure; :mod:`gce.files.constraints` reads and writes the
scenario-file form; :mod:`gce.constraints.data` estimates membership limits
from a membership table (001, Sec. V-A: the store chain).

Examples
--------
>>> from gce.constraints import AtMost, ConstraintSet
>>> hospitals = ConstraintSet(1000, (AtMost(365),))  # 001, Sec. V-A, Example 1
>>> hospitals.satisfied(range(365)), hospitals.satisfied(range(366))
(True, False)
"""

from .base import AtMostBound, Constraint
from .constraint_set import MAX_ENUMERATED_COMPONENTS, ConstraintSet
from .data import MembershipEstimate, estimate_membership
from .kinds import AtMost, Conflicts, Exclusive, Patterns, Together
from .linear import LinearSystem

__all__ = [
    "Constraint",
    "AtMost",
    "Exclusive",
    "Together",
    "Conflicts",
    "Patterns",
    "ConstraintSet",
    "MembershipEstimate",
    "estimate_membership",
    "LinearSystem",
    "AtMostBound",
    "MAX_ENUMERATED_COMPONENTS",
]
