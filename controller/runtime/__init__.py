"""The generic controller runtime: nothing here knows what a job is.

The work queue's workers and the handlers that feed them, the API write client with its request
budget, the Event recorder, leader election, the manager that runs it all, the metrics and health
server with its authentication, the start-up checks, and logging.
"""
