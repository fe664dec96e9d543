"""Admission: what a kube-apiserver's admission plugins do to a write after it is authorized and before
it is stored: OwnerReferencesPermissionEnforcement, the default mutating plugins on every pod
created, and ValidatingAdmissionPolicy's CEL validations."""
