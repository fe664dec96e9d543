"""Who is asking and what they may do: authentication (bearer tokens, impersonation) and a request's
attributes; service-account JWTs (the issuer's RSA key, signing, validation, OIDC discovery
documents); the RBAC authorizer and ClusterRole aggregation; RBAC's escalation and bind checks on
writes of roles and bindings; the bootstrap RBAC policy a kube-apiserver creates; the serving
certificate and what a raw client needs to reach the cluster (URL, admin token, CA); the openssl command that
makes the keys and certificates, and the one line that says how to install it when it is missing."""
