"""Bridges from other privacy libraries' descriptions to gce's guarantee records.

:mod:`gce.bridges.dp_events` reads Google dp-accounting's ``DpEvent`` trees (by class name: nothing is
imported from dp-accounting there); :mod:`gce.bridges.accountant` is ``GceAccountant``, a dp-accounting
``PrivacyAccountant`` on gce's engines (it imports dp-accounting, through
:mod:`gce.accounting.dp_accounting`). This package module imports neither.
"""
