"""Bridges from the tools people already account privacy with to gce (imported on first use: this package
module imports no optional dependency).

:mod:`gce.bridges.dp_events` reads Google dp-accounting's ``DpEvent`` trees (by class name: nothing is
imported from dp-accounting there); :mod:`gce.bridges.accountant` is ``GceAccountant``, a dp-accounting
``PrivacyAccountant`` on gce's engines (it imports dp-accounting, through
:mod:`gce.accounting.dp_accounting`); :mod:`gce.bridges.opacus` has Opacus accountants for shuffled
(random allocation) and Poisson-sampled batches (Opacus and torch only when registered).
"""
