"""The training-job kit: what Kubeflow-style training kinds have in common, as training-operator's
common code is for its job kinds. A kind builds on it rather than copying a sibling kind:

- kind.py: `TrainingKind[T]`, the JobKind base of a training kind: parsing and the shared checks, restarts,
  the verdict by master, the deadline, the TensorBoard, the Services on the training container's port;
- runpolicy.py: `RunPolicy` (activeDeadlineSeconds, one restart budget for the job in backoffLimit,
  cleanUpPolicy with the lowercase spellings), and the `enable` spelling of a switch's `enabled`;
- restart.py: restart policies by replica type (Never, OnFailure, Always, ExitCode) against the job's
  budget, ExitCode's retryable exit codes of the training container;
- tensorboard.py: T9k's TensorBoardSpec fields and the TensorBoard a job owns (a dependent);
- containers.py: the training container, its port by name, variables set unless the user did;
- crd.py: the spec and status schemas, the name rules and the CRD file every training kind's CRD has.

The engine never imports the kit; kinds do (controller/kinds/<kind>/)."""
