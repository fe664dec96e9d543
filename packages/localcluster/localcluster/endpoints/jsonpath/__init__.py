"""client-go's JSONPath (k8s.io/client-go/util/jsonpath), as kube-apiserver evaluates a CRD's printer columns.

apiextensions-apiserver's tableconvertor parses each column's `jsonPath` wrapped in `{}` with missing keys
allowed, takes the first value of the first result (none, or an error anywhere, is an empty cell: null), and
prints a string column's value with PrintResults. This is a port of that parser and evaluator, so a column
gets what it gets from kube-apiserver, quirks included:

- a filter is one comparison, `[?(@.type=="Failed")]` (`==`, `!=`, `<`, `>`, `<=`, `>=`), or an existence test,
  `[?(@.message)]`; no `&&`, and a filter of what is not a list (a filter's result) is an error;
- comparisons are Go's text/template ones: values of different kinds (a string and a number, `1` and `1.0`)
  do not compare, an error that empties the cell even when an earlier item matched;
- `['a.b']` is read as the two fields `a` and `b` (only `a\\.b` escapes a dot), `[]` is `[0]`, and an index
  out of range is an error;
- a string column prints a map or a list as JSON (json.Marshal: sorted keys, `<` as `\u003c`), a null as
  `<no value>`, a float as Go's `%v` (`1.2345675e+06`).

The numbers of an object are taken as kube-apiserver holds them after its JSON round trip: a whole float is an
integer (`1.0` is `1`) and an integer past int64 a float. A `{range}` is evaluated within one row; client-go's
JSONPath keeps what a range consumed for the rows after it, which no column should rely on.

The rooms: values (the errors and Go's value types), parsing (parser.go), evaluation (jsonpath.go),
comparison (text/template's), printing (PrintResults).
"""

from __future__ import annotations

from .comparison import compare
from .evaluation import find_results
from .parsing import parse
from .printing import go_float, go_json, go_text, print_result
from .values import EOF, INT64, Failed, JSONPathError, Uint8, number

__all__ = ["EOF", "INT64", "Failed", "JSONPathError", "Uint8", "compare", "find_results", "go_float", "go_json",
           "go_text", "number", "parse", "print_result"]
