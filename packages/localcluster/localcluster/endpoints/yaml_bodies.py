"""YAML request bodies decoded as the apiserver decodes them (sigs.k8s.io/yaml over go-yaml), bounded.

PyYAML's loaders build the whole tree first and share an aliased node instead of copying it, so a
few hundred bytes of nested aliases ("billion laughs") pass the loader and explode later, when the
object is validated, stored or written back: the issue's 582-byte review answered 622 MB. go-yaml
counts every node it decodes, and every node decoded inside an alias expansion, and stops with
"document contains excessive aliasing" once the share of expanded nodes passes its allowance (the
rule below, from its decode.go). This decoder reads libyaml's events one at a time, counts the
same way (an alias costs the size of what it names, known when that node was finished) and refuses
before copying anything; what it accepts is a tree of plain, unshared dicts and lists.

Nesting is bounded too: go-yaml's parser stops at 10000 levels, but this server's own code (the JSON
encoder stops at 254) cannot carry that, so MAX_DEPTH is lower and said in the same words.
"""

from __future__ import annotations

import base64
import binascii
import math

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

MAX_DEPTH = 200  # nested collections; far beyond any real object, below what the JSON encoder carries
# go-yaml's allowance: aliases may expand to 99% of the nodes of a small document, tapering to 10%
# between 400,000 and 4,000,000 decoded nodes; below 100 expansions or 1,000 nodes nothing is refused.
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NULL, BOOL, INT, FLOAT, STR, BINARY, MERGE = (f"tag:yaml.org,2002:{name}" for name in
                                              ("null", "bool", "int", "float", "str", "binary", "merge"))


class YamlError(ValueError):
    """A body go-yaml would not decode; str() is its message ("yaml: ...")."""


def allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - ALIAS_RATIO_RANGE_LOW) / (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW)


class _Merge:
    """The `<<` key of a mapping: what follows it is merged into the mapping."""


class _Frame:
    __slots__ = ("anchor", "container", "height", "key", "size")

    def __init__(self, container, anchor: str | None) -> None:
        self.container, self.anchor = container, anchor
        self.key: object = None
        self.size = 1  # nodes decoded for it, with what its aliases expanded to
        self.height = 1


class _Decoder:
    def __init__(self) -> None:
        self.decode_count = 1  # the document node
        self.alias_count = 0
        self.anchors: dict[str, tuple[object, int, int]] = {}  # name: (value, size, height)
        self.open_anchors: set[str] = set()
        self.stack: list[_Frame] = []
        self.result: object = None
        self.done = False
        self.constructor = SafeConstructor()
        self.resolver = Resolver()

    def _count(self, nodes: int, expanded: int) -> None:
        self.decode_count += nodes
        self.alias_count += expanded
        if (self.alias_count > 100 and self.decode_count > 1000
                and self.alias_count / self.decode_count > allowed_alias_ratio(self.decode_count)):
            raise YamlError("yaml: document contains excessive aliasing")

    def _deeper(self, height: int, line: int) -> None:
        if len(self.stack) + height > MAX_DEPTH:
            raise YamlError(f"yaml: line {line}: exceeded max depth of {MAX_DEPTH}")

    def event(self, event) -> None:
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.ScalarEvent):
            self._count(1, 0)
            self._finish(self._scalar(event, line), 1, 0, event.anchor)
        elif isinstance(event, yaml.AliasEvent):
            self._alias(event.anchor or "", line)  # the parser never makes an alias without its name
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self._count(1, 0)
            self._deeper(1, line)
            container: dict | list = {} if isinstance(event, yaml.MappingStartEvent) else []
            if event.anchor:
                self.open_anchors.add(event.anchor)
            self.stack.append(_Frame(container, event.anchor))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            frame = self.stack.pop()
            if frame.anchor:
                self.open_anchors.discard(frame.anchor)
            self._finish(frame.container, frame.size, frame.height, frame.anchor)
        elif isinstance(event, yaml.DocumentEndEvent):
            self.done = True

    def _alias(self, name: str, line: int) -> None:
        if name in self.open_anchors:
            raise YamlError(f"yaml: anchor '{name}' value contains itself")
        if name not in self.anchors:
            raise YamlError(f"yaml: unknown anchor '{name}' referenced")
        value, size, height = self.anchors[name]
        # go-yaml decodes the alias node, then every node of what it names as an expansion; the stream's
        # aliases are all outside one (those inside are in `size`), so the check at the end is the
        # check at every step: both counts grow together and the allowance only shrinks.
        self._count(1 + size, size)
        self._deeper(height, line)
        self._finish(_copy(value), 1 + size, height, None)

    def _finish(self, value, size: int, height: int, anchor: str | None) -> None:
        if anchor:
            self.anchors[anchor] = (value, size, height)  # copied at each alias: nothing is shared
        if not self.stack:
            self.result = "<<" if value is _Merge else value
            return
        frame = self.stack[-1]
        frame.size += size
        frame.height = max(frame.height, height + 1)
        if isinstance(frame.container, list):
            frame.container.append("<<" if value is _Merge else value)
        elif frame.key is None:
            frame.key = _Merge if value is _Merge else _key(value)
        else:
            key, frame.key = frame.key, None
            if key is _Merge:
                _merge(frame.container, value)
            else:
                frame.container[key] = "<<" if value is _Merge else value

    def _scalar(self, event, line: int):
        value, tag = event.value, event.tag
        if tag in (None, "!"):
            tag = self.resolver.resolve(yaml.ScalarNode, value, event.implicit)
        node = yaml.ScalarNode(tag, value)
        try:
            if tag == MERGE:
                return _Merge
            if tag == NULL:
                return None
            if tag == BOOL:
                return self.constructor.construct_yaml_bool(node)
            if tag == INT:
                return self.constructor.construct_yaml_int(node)
            if tag == FLOAT:
                number = self.constructor.construct_yaml_float(node)
                if math.isnan(number) or math.isinf(number):
                    text = "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")
                    raise YamlError(f"json: unsupported value: {text}")
                return number
            if tag == BINARY:
                return base64.b64decode(value.encode()).decode("utf-8", errors="replace")
        except (ValueError, ConstructorError, binascii.Error) as exc:
            if isinstance(exc, YamlError):
                raise
            raise YamlError(f"yaml: line {line}: cannot decode {tag.rsplit(':', 1)[-1]} `{value[:10]}`") from None
        return value  # a string; a timestamp stays one, as go-yaml leaves it for an untyped target


def _key(value) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it in JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    raise YamlError(f"yaml: invalid map key: {type(value).__name__}")


def _merge(into: dict, value) -> None:
    """`<<: *a` or `<<: [*a, *b]` (the earlier wins): keys merged as go-yaml does, later keys override."""
    if isinstance(value, dict):
        into.update(value)
    elif isinstance(value, list) and all(isinstance(item, dict) for item in value):
        for item in reversed(value):
            into.update(item)
    else:
        raise YamlError("yaml: map merge requires map or sequence of maps as the value")


def _copy(value):
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def load(raw: bytes | str):
    """The first document of `raw` as plain JSON-like values; YamlError as go-yaml would refuse it."""
    decoder = _Decoder()
    try:
        for event in yaml.parse(raw, Loader=PARSER):
            decoder.event(event)
            if decoder.done:
                break
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark else ""
        raise YamlError(f"yaml: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"yaml: {exc}") from None
    return decoder.result


def unrecognized(kind: str, error: YamlError, raw: bytes) -> str:
    """The apiserver's 400 for a body its decoder refused before learning its kind (transformDecodeError): the
    error, then the body's first 30 bytes, as text if it starts with "{", else in hex."""
    head = raw[:30]
    summary = head.decode(errors="replace") if raw[:1] == b"{" else head.hex()
    if len(raw) > 30:
        summary += " ..."
    return f"the object provided is unrecognized (must be of type {kind}): {error} ({summary})"
