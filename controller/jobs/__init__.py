"""The job engine, written once for every job kind.

A kind (controller/kinds/) says what is its own through the `JobKind` protocol (kind.py); the
engine does the rest, in four rooms by role, each importing only those before it:
- schema/: the shared API, the CRD and checks every kind builds on, the admission review, names and labels;
- children/: the builders of pods, Services and the PodGroup;
- decisions/: pure, no I/O: replica slots and restart accounting, the plan (the only place decisions are
  made), conditions and clean-up;
- execution/: the reconciler, which only executes a plan, and the controller of one kind.
training/ is the kit the training kinds build on.

The invariants the engine keeps whatever users do to a live job (terminal is final, budgets are never
refunded, every outcome is judged before an edit takes effect, counters only grow, the deadline counts
active time only, at most one pod per rank, ...) are listed in ARCHITECTURE.md ("Invariants of the
engine"), each with the test that proves it; tests/controller/test_engine_model.py checks them all after
every step of made-up sequences.
"""
