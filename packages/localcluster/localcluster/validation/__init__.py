"""Validation: what a write must satisfy before it is stored, as kube-apiserver checks it. The built-in
kinds' defaulting and validation (their REST strategies) and their OpenAPI schemas
(k8s_openapi.json.gz, generated); custom resources against their CRD's structural schema; CEL rules
(parsed, type-checked and priced as cel-go and apiextensions-apiserver do, crd_cel.py when a CRD is
written); resource.Quantity. Pure functions on dicts: nothing here stores, serves or knows who asks."""
