"""``python -m gce`` runs the command line (:mod:`gce.cli`)."""

from .cli import main_exit

main_exit()
