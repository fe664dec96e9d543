"""API machinery shared by every layer: what the informers, the controller and localcluster all need.

- `errors`: `ApiStatusError`, a Status answer as the client sees it;
- `selectors`: label and field selectors, with the API server's grammar and messages;
- `resource`: an API collection by group, version and plural, and its URL paths;
- `meta`: an object's key and controlling owner.

Nothing here does I/O, and nothing here imports another package of the project.
"""
