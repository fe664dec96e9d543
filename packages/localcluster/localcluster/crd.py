"""localcluster's CRD tools, for a project that writes CRDs (the controller's CRD tests): what the API server checks
when a CRD is written, callable without a server.

- `is_structural`: apiextensions' structural-schema check;
- `errors`, `rule_costs`, the limits: the CEL validation rules compiled and their cost estimated, as
  apiextensions-apiserver does (`MINIMUM_VERSION`: the oldest Kubernetes the estimate holds for);
- the estimators by Kubernetes version (`K8S_1_24`, `K8S_1_28`, `K8S_1_35`, `WORST`);
- `parse`, `Checker`, `decl_type`: a rule parsed and type-checked against a schema; `RULE_FIELDS`, `FUNCTIONS`:
  the version that first has each rule field and CEL function;
- `compile_expression`: a ValidatingAdmissionPolicy's expression compiled as the server would.
"""

from __future__ import annotations

from .admission.validating_policies import compile_expression
from .validation.cel_ast import parse
from .validation.cel_cost import K8S_1_24, K8S_1_28, K8S_1_35, WORST
from .validation.cel_types import Checker, decl_type
from .validation.cel_versions import FUNCTIONS, RULE_FIELDS
from .validation.crd_cel import (
    MINIMUM_VERSION,
    STATIC_ESTIMATED_COST_LIMIT,
    STATIC_ESTIMATED_CRD_COST_LIMIT,
    errors,
    rule_costs,
)
from .validation.schema import is_structural

__all__ = ["FUNCTIONS", "K8S_1_24", "K8S_1_28", "K8S_1_35", "MINIMUM_VERSION", "RULE_FIELDS",
           "STATIC_ESTIMATED_COST_LIMIT", "STATIC_ESTIMATED_CRD_COST_LIMIT", "WORST", "Checker", "compile_expression",
           "decl_type", "errors", "is_structural", "parse", "rule_costs"]
