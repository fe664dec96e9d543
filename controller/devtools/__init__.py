"""Developer tooling, never imported by `run`: `genericjob-controller local` (an embedded
localcluster with the controller), manifest submission, job progress and pod logs."""
