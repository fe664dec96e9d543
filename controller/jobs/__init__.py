"""The job engine, written once for every job kind.

A kind (controller/kinds/) says what is its own through the `JobKind` protocol (kind.py); the
engine does the rest: replica slots and restart accounting, the plan (the only place decisions are
made), conditions and clean-up, the children (pods, Services, the PodGroup), and the reconciler,
which only executes a plan.
"""
