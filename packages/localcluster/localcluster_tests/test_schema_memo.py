"""What is built from a CRD's schema is built once per schema dict and kept only for the latest LIMIT schemas
(validation/schema/memo.py): a process that runs cluster after cluster keeps a bounded number, not every one."""

from __future__ import annotations

from localcluster.api.objects import status_schema
from localcluster.fields.fieldshapes import _crd_root
from localcluster.validation.schema.compiled import compiled_node
from localcluster.validation.schema.memo import LIMIT, BySchema


def test_built_once_per_schema_dict_and_only_the_latest_kept():
    built: list[dict] = []
    memo = BySchema(lambda schema: built.append(schema) or len(built), limit=3)
    a, b, c, d = ({"type": "object"} for _ in range(4))  # equal, but four dicts: four schemas
    assert [memo(a), memo(b), memo(a)] == [1, 2, 1] and built == [a, b]
    memo(c)
    memo(a)  # used again: now the latest, and b the oldest
    memo(d)  # one too many: b goes
    assert len(memo) == 3
    assert memo(a) == 1 and memo(c) == 3 and memo(d) == 4
    assert memo(b) == 5  # built again


def test_cluster_after_cluster_keeps_a_bounded_number_of_schemas():
    """Each cluster's CRDs are new dicts: the memos of admission (compiled schemas, status-only forms) and of
    field management hold the latest LIMIT, however many clusters the process has run."""
    for memo in (compiled_node, status_schema, _crd_root):
        assert isinstance(memo, BySchema) and memo.limit == LIMIT
    for _ in range(LIMIT + 5):
        schema = {"type": "object", "properties": {"status": {"type": "object"}}}
        compiled_node(schema)
        status_schema(schema)
    assert len(compiled_node) == len(status_schema) == LIMIT
