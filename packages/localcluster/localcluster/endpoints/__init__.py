"""The REST surface over HTTP: URL routing, lists (with continue tokens bound to the list they go on) and watches,
query parameters and DeleteOptions decoded as the server decodes them, the access check of every request
(authentication, impersonation, RBAC, admission), server-side printing for `kubectl get` (the printer columns'
JSONPath as client-go's), protobuf bodies, the scale subresource, TokenRequest, the issuer's OIDC discovery and
JWKS, the review kinds, fault injection and request accounting, and the warning printed when served beyond this
machine."""
