"""Admission: what a kube-apiserver's admission plugins do to a write after it is authorized and before
it is stored: OwnerReferencesPermissionEnforcement, the default mutating plugins on every pod
created, ValidatingAdmissionPolicy's CEL validations, and the admission webhooks (webhook_configs.py: the
configurations; webhooks.py: matching and calling; webhook_calls.py: one HTTPS call; webhook_steps.py: how the
synchronous verbs await them)."""
