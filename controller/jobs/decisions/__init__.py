"""The engine's pure decisions: plan.py and the policies it is made of (restart, backoff, clean-up, edits, status,
waiting, held, conflicts, ...), and the typed actions it returns. No I/O, no clock: everything is passed in."""
