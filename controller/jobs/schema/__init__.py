"""The engine's schema: what the API server is told and what a job's spec must be — the shared API (api.py), the
CRD and checks every kind builds on (crd.py, validation.py), the admission review, and the names and labels."""
