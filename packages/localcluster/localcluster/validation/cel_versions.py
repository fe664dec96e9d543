"""In which Kubernetes version a newly created CRD may first use each CEL feature of its rules.

From k8s.io/apiserver/pkg/cel/environment/base.go: every library has the IntroducedVersion of its
environment options, and a new CRD's rules are compiled in the environment of the server's
DefaultCompatibilityVersion, n-1 (so a library introduced in 1.28's environment is usable by new
rules from 1.29 on). Rules themselves (x-kubernetes-validations) are on by default from 1.25 (beta,
KEP-2876); `messageExpression` from 1.27, `reason` and `fieldPath` from 1.28, `optionalOldSelf`
from 1.30.

A function that is not here is unknown to every server: rules calling it do not compile.
"""

from __future__ import annotations

RULES = (1, 25)  # x-kubernetes-validations, and everything of the environment's "1.0" options

RULE_FIELDS = {"rule": RULES, "message": RULES, "messageExpression": (1, 27), "reason": (1, 28),
               "fieldPath": (1, 28), "optionalOldSelf": (1, 30)}

_STANDARD = ("size", "matches", "contains", "startsWith", "endsWith", "string", "int", "uint", "double", "bytes",
             "bool", "dyn", "type", "duration", "timestamp", "getFullYear", "getMonth", "getDate", "getDayOfMonth",
             "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes", "getSeconds", "getMilliseconds")
_LISTS = ("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf")  # library.Lists
_REGEX = ("find", "findAll")  # library.Regex
_URLS = ("url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery")
_STRINGS_V0 = ("charAt", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim", "join")
_QUANTITY = ("quantity", "isQuantity", "sign", "isInteger", "asInteger", "asApproximateFloat", "add", "sub",
             "isGreaterThan", "isLessThan", "compareTo")
_SETS = ("sets.contains", "sets.equivalent", "sets.intersects")
_IP_CIDR = ("ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
            "isLinkLocalUnicast", "isGlobalUnicast", "cidr", "isCIDR", "containsIP", "containsCIDR", "masked",
            "prefixLength")
_FORMAT = ("format.named", "format.dns1123Label", "format.dns1123Subdomain", "format.dns1035Label",
           "format.qualifiedName", "format.dns1123LabelPrefix", "format.dns1123SubdomainPrefix",
           "format.dns1035LabelPrefix", "format.labelValue", "format.uri", "format.uuid", "format.byte",
           "format.date", "format.datetime", "validate")

FUNCTIONS: dict[str, tuple[int, int]] = {
    **dict.fromkeys(_STANDARD, RULES), **dict.fromkeys(_LISTS, RULES), **dict.fromkeys(_REGEX, RULES),
    **dict.fromkeys(_URLS, RULES), **dict.fromkeys(_STRINGS_V0, RULES),
    **dict.fromkeys(_QUANTITY, (1, 29)),  # environment 1.28
    **dict.fromkeys(("format", "strings.quote"), (1, 30)), **dict.fromkeys(_SETS, (1, 30)),  # environment 1.29
    **dict.fromkeys(_IP_CIDR, (1, 31)),  # environment 1.30
    **dict.fromkeys(_FORMAT, (1, 32)),  # environment 1.31
    **dict.fromkeys(("semver", "isSemver", "major", "minor", "patch"), (1, 34)),  # environment 1.33
}
for _name in ("isGreaterThan", "isLessThan", "compareTo"):  # quantity's from 1.29, semver's from 1.34
    FUNCTIONS[_name] = (1, 29)

# Language features: optional types (`?.`, `optional.of`) and cross-type numeric comparisons from
# environment 1.28; two-variable comprehensions (`all(k, v, ...)`, `transformMap`) from 1.32.
OPTIONAL_TYPES = (1, 29)
TWO_VARIABLE_COMPREHENSIONS = (1, 33)


def version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"
