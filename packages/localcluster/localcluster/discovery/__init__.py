"""What the server says of itself: /version, the discovery documents (/api, /apis) and the OpenAPI
documents (/openapi/v3 and /openapi/v2, JSON or protobuf) that kubectl reads before it acts."""
