"""The engine's execution: the controller of one kind (controller.py, config.py, metrics.py, the cache trimming) and
the reconciler, which reads the caches, asks decisions/ for a plan and does its writes in order."""
