"""Storage: the in-memory etcd and what is kept in it. The store (objects, one resourceVersion counter,
a bounded event history) and its watchers; the kinds served (built-in ones from a table, custom ones
from CRDs); what a DELETE and a `/status` write do to a stored object; Events kept once and seen
through two APIs; the audit log of writes that checkers in other processes read."""
