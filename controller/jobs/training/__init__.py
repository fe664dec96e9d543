"""The training-job kit: what Kubeflow-style training kinds have in common, as training-operator's
common code is for its job kinds. A kind builds on it rather than copying a sibling kind:

- runpolicy.py: `RunPolicy` (activeDeadlineSeconds, one restart budget for the job in backoffLimit,
  cleanUpPolicy with the lowercase spellings), and the `enable` spelling of a run mode's `enabled`;
- restart.py: restart policies by replica type (Never, OnFailure, Always, ExitCode) against the job's
  budget, ExitCode's retryable exit codes of the training container;
- status.py: the per-type status codec (`status.tasks[]` with each type's records under one key).

The engine never imports the kit; kinds do (controller/kinds/<kind>/)."""
