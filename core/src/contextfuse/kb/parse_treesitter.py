"""JavaScript, TypeScript, Go, Rust and Java with tree-sitter grammar wheels (optional).

Each language needs ``tree-sitter`` and its grammar wheel (the ``treesitter`` extra); when
either is missing, :func:`parser_for` returns None and the file is indexed as plain text.
Only declarations are walked in Python (top level and class bodies), so parsing stays fast.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import attrs

from contextfuse.kb.parsed import Import, ParsedFile, Segment, Symbol

__all__ = ["LANGUAGES", "TreeSitterParser", "missing_reason", "parser_for"]

_WHOLE_TYPE_LINES = 40  # struct/interface/enum declarations up to this size stay whole at depth 4
_SHORT_FUNCTION_LINES = 2  # functions this short are their own signature


@attrs.frozen
class _Spec:
    grammar: str  # module of the grammar wheel
    entry: str  # its function returning the language capsule
    functions: frozenset[str]
    containers: dict[str, str]  # node type -> symbol kind
    types: dict[str, str]  # whole-text declarations: node type -> symbol kind
    wrappers: frozenset[str] = frozenset()  # ``export ...``: the declaration is inside
    fields: frozenset[str] = frozenset()  # class members kept verbatim at depth 4
    imports: tuple[re.Pattern[str], ...] = ()


_JS_IMPORTS = (
    re.compile(r"""\bfrom\s*['"]([^'"\n]+)['"]"""),
    re.compile(r"""\bimport\s*\(?\s*['"]([^'"\n]+)['"]"""),
    re.compile(r"""\brequire\s*\(\s*['"]([^'"\n]+)['"]"""),
)


def _js(entry: str) -> _Spec:
    """JavaScript and TypeScript share node types (TypeScript adds interfaces and types)."""
    return _Spec(
        grammar="tree_sitter_javascript" if entry == "language" else "tree_sitter_typescript",
        entry=entry,
        functions=frozenset(
            {
                "function_declaration",
                "generator_function_declaration",
                "method_definition",
                "function_signature",
                "method_signature",
                "abstract_method_signature",
            }
        ),
        containers={
            "class_declaration": "class",
            "abstract_class_declaration": "class",
            "interface_declaration": "interface",
        },
        types={"type_alias_declaration": "type", "enum_declaration": "enum"},
        wrappers=frozenset({"export_statement"}),
        fields=frozenset({"public_field_definition", "field_definition", "property_signature"}),
        imports=_JS_IMPORTS,
    )


LANGUAGES: dict[str, _Spec] = {
    "javascript": _js("language"),
    "typescript": _js("language_typescript"),
    "tsx": _js("language_tsx"),
    "go": _Spec(
        "tree_sitter_go",
        "language",
        functions=frozenset({"function_declaration", "method_declaration"}),
        containers={},
        types={"type_declaration": "type"},
        imports=(
            re.compile(r"""^import\s+(?:[\w.]+\s+)?"([^"]+)\"""", re.MULTILINE),
            re.compile(r"""^\s+(?:[\w.]+\s+)?"([^"\n]+)"\s*$""", re.MULTILINE),
        ),
    ),
    "rust": _Spec(
        "tree_sitter_rust",
        "language",
        functions=frozenset({"function_item", "function_signature_item"}),
        containers={"trait_item": "trait", "impl_item": "impl", "mod_item": "module"},
        types={
            "struct_item": "struct",
            "enum_item": "enum",
            "union_item": "union",
            "type_item": "type",
        },
        imports=(
            re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.MULTILINE),
            re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+((?:\w+::)*\w+)", re.MULTILINE),
        ),
    ),
    "java": _Spec(
        "tree_sitter_java",
        "language",
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        containers={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "record",
            "annotation_type_declaration": "annotation",
        },
        types={},
        fields=frozenset({"field_declaration", "constant_declaration"}),
        imports=(re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+?)(?:\.\*)?\s*;", re.MULTILINE),),
    ),
}
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_HERITAGE = frozenset(
    {
        "class_heritage",
        "superclass",
        "super_interfaces",
        "extends_interfaces",
        "extends_clause",
        "implements_clause",
        "extends_type_clause",
    }
)
_NAMES = frozenset({"identifier", "type_identifier", "property_identifier", "field_identifier"})
_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_GENERIC = re.compile(r"<.*>")
_JS_TARGET = re.compile(r"[\w$]+(?:\.[\w$]+)*")
_DOC_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|//[/!]?)\s?")


@cache
def _load(language: str) -> tuple[Any, Any] | str:
    """(tree_sitter module, Language) or why the language cannot be parsed."""
    spec = LANGUAGES[language]
    try:
        tree_sitter = importlib.import_module("tree_sitter")
    except ImportError:
        return "tree-sitter is not installed (install contextfuse-core[treesitter])"
    try:
        grammar = importlib.import_module(spec.grammar)
    except ImportError:
        return f"grammar {spec.grammar.replace('_', '-')} is not installed"
    return tree_sitter, tree_sitter.Language(getattr(grammar, spec.entry)())


def missing_reason(language: str) -> str | None:
    """Why ``language`` files are indexed as plain text, or None when a parser is available."""
    loaded = _load(language)
    return loaded if isinstance(loaded, str) else None


@cache
def parser_for(language: str) -> TreeSitterParser | None:
    """A parser for ``language`` or None when tree-sitter or its grammar is missing."""
    loaded = _load(language)
    if isinstance(loaded, str):
        return None
    tree_sitter, lang = loaded
    return TreeSitterParser(language, LANGUAGES[language], tree_sitter.Parser(lang))


class TreeSitterParser:
    """Declarations of one language: symbols, depth-4 segments, imports."""

    def __init__(self, language: str, spec: _Spec, parser: Any) -> None:
        self.language = language
        self.spec = spec
        self.parser = parser
        self.parser_id = f"treesitter-{language}/2"

    def parse(self, text: str, lines: list[str]) -> ParsedFile:
        """Parse one file (tree-sitter always produces a tree, errors included)."""
        data = text.encode("utf-8")
        tree = self.parser.parse(data)
        walk = _Walk(self.spec, data, lines, ParsedFile(self.language, self.parser_id))
        walk.body(tree.root_node.named_children, parent="", prefix="", owner=None)
        parsed = walk.parsed
        parsed.imports = [Import(m) for m in _imports(self.spec, self.language, text)]
        if not parsed.summary:
            parsed.summary = walk.file_doc
        return parsed


def _imports(spec: _Spec, language: str, text: str) -> list[str]:
    found: dict[str, None] = {}
    for pattern in spec.imports:
        for match in pattern.finditer(text):
            value = match.group(1)
            if language == "rust" and pattern is spec.imports[0]:
                value = f"mod:{value}"  # ``mod foo;`` names a file next to this one
            found.setdefault(value, None)
    return list(found)


class _Walk:
    def __init__(self, spec: _Spec, data: bytes, lines: list[str], parsed: ParsedFile) -> None:
        self.spec = spec
        self.data = data
        self.lines = lines
        self.parsed = parsed
        self.seen: dict[str, Symbol] = {}
        self.file_doc = ""

    def text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def body(
        self, children: Iterable[Any], parent: str, prefix: str, owner: list[Segment] | None
    ) -> None:
        """Visit declarations; ``prefix`` qualifies names (``Type.`` inside an impl)."""
        top = owner is None
        owner = self.parsed.head if owner is None else owner
        docs: list[Any] = []
        for child in children:
            kind = child.type
            if top and kind in _COMMENTS and not self.file_doc:
                self.file_doc = _doc_summary([self.text(child)])
            top = top and kind in _COMMENTS
            if kind in _COMMENTS:
                if docs and docs[-1].end_point.row + 1 < child.start_point.row:
                    docs = []
                docs.append(child)
                continue
            doc = docs if docs and docs[-1].end_point.row + 1 >= child.start_point.row else []
            docs = []
            self.declaration(child, child, doc, parent, prefix, owner)

    def declaration(
        self,
        outer: Any,
        node: Any,
        doc: list[Any],
        parent: str,
        prefix: str,
        owner: list[Segment],
    ) -> None:
        kind = node.type
        spec = self.spec
        if kind in spec.wrappers:
            inner = node.child_by_field_name("declaration")
            if inner is None:
                inner = next((c for c in node.named_children if c.type not in _COMMENTS), None)
            if inner is not None:
                self.declaration(outer, inner, doc, parent, prefix, owner)
            return
        if kind in spec.functions:
            self.function(outer, node, doc, parent, prefix)
        elif kind in ("lexical_declaration", "variable_declaration"):
            for declarator in node.named_children:
                value = _assigned_value(declarator.child_by_field_name("value"))
                if value is not None and value.type in _JS_FUNCTION_VALUES:
                    self.function(outer, declarator, doc, parent, prefix)
        elif kind == "expression_statement" and node.named_children:
            expression = node.named_children[0]
            if expression.type == "assignment_expression":
                self.assigned_function(outer, expression, doc, parent, prefix)
        elif kind == "impl_item":
            self.impl(outer, node, doc, parent, owner)
        elif kind in spec.containers:
            self.container(outer, node, doc, parent, prefix, spec.containers[kind])
        elif kind == "type_declaration":  # Go: ``type ( A struct{...}; B int )``
            specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
            for type_spec in specs:
                self.whole(
                    outer if len(specs) == 1 else type_spec,
                    type_spec,
                    doc,
                    parent,
                    prefix,
                    _go_kind(type_spec),
                )
        elif kind in spec.types:
            self.whole(outer, node, doc, parent, prefix, spec.types[kind])
        elif kind in spec.fields:
            owner.append(self.block(outer.start_point.row + 1, outer.end_point.row + 1, 3))

    # ---- symbols ---------------------------------------------------------------------------

    def add(
        self,
        outer: Any,
        node: Any,
        doc: list[Any],
        parent: str,
        prefix: str,
        kind: str,
        segments: list[Segment],
        name: str | None = None,
    ) -> Symbol:
        if name is None:
            name_node = node.child_by_field_name("name")
            name = self.text(name_node) if name_node is not None else kind
        start = (doc[0] if doc else outer).start_point.row + 1
        line = outer.start_point.row + 1
        qualname = f"{prefix}{name}"
        if qualname in self.seen:  # overloads and redefinitions keep unique URIs
            qualname = f"{qualname}@L{line}"
        header = segments[0][1] if segments else ""
        doc_segments = [self.block(start, line - 1)] if doc else []
        symbol = Symbol(
            kind=kind,
            name=name,
            qualname=qualname,
            parent=parent,
            line_start=start,
            line_end=outer.end_point.row + 1,
            label=_label(header),
            summary=_doc_summary([self.text(d) for d in doc]) if doc else "",
            segments=doc_segments + segments,
            bases=self.bases(node),
        )
        self.seen[qualname] = symbol
        self.parsed.symbols.append(symbol)
        return symbol

    def function(self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str) -> None:
        name: str | None = None
        if node.type == "method_declaration" and self.spec.grammar == "tree_sitter_go":
            receiver = _receiver_type(self, node)
            if receiver:
                parent = receiver if receiver in self.seen else parent
                prefix = f"{receiver}."
        kind = "method" if prefix or parent else "function"
        first, last = outer.start_point.row + 1, outer.end_point.row + 1
        body = node.child_by_field_name("body")
        if body is None and node.type == "variable_declarator":
            body = node.child_by_field_name("value")
            body = body.child_by_field_name("body") if body is not None else None
        if body is None or last - first + 1 <= _SHORT_FUNCTION_LINES or not _braced(body):
            segments = [self.block(first, last)]
        else:
            segments = self.header(outer, body, elide=True)
        self.add(outer, node, doc, parent, prefix, kind, segments, name)

    def assigned_function(
        self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str
    ) -> None:
        """JavaScript's ``proto.handle = function handle(req, res) {...}`` and kin.

        CommonJS modules and pre-class code define most of their functions this way
        (``exports.x = ...``, ``Layer.prototype.match = ...``); the target names the symbol,
        ``.prototype`` left out (``Layer.match``).
        """
        left = node.child_by_field_name("left")
        value = _assigned_value(node.child_by_field_name("right"))
        if left is None or value is None or value.type not in _JS_FUNCTION_VALUES:
            return
        target = self.text(left).replace(".prototype.", ".")
        if not _JS_TARGET.fullmatch(target):
            return  # computed members (``obj[key] = ...``) name nothing stable
        owner, _, name = target.rpartition(".")
        first, last = outer.start_point.row + 1, outer.end_point.row + 1
        body = value.child_by_field_name("body")
        if body is None or last - first + 1 <= _SHORT_FUNCTION_LINES or not _braced(body):
            segments = [self.block(first, last)]
        else:
            segments = self.header(outer, body, elide=True)
        qualifier = f"{prefix}{owner}." if owner else prefix
        kind = "method" if qualifier else "function"
        self.add(outer, node, doc, parent, qualifier, kind, segments, name)

    def container(
        self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str, kind: str
    ) -> None:
        body = node.child_by_field_name("body")
        if body is None:
            if kind != "module":  # ``mod foo;`` is an import, not a declaration
                self.whole(outer, node, doc, parent, prefix, kind)
            return
        segments = self.header(outer, body, elide=False)
        symbol = self.add(outer, node, doc, parent, prefix, kind, segments)
        self.body(body.named_children, symbol.qualname, f"{symbol.qualname}.", symbol.segments)

    def impl(
        self, outer: Any, node: Any, doc: list[Any], parent: str, owner: list[Segment]
    ) -> None:
        """Rust ``impl``: its methods belong to the type (``S.method``), not to a symbol."""
        type_node = node.child_by_field_name("type")
        body = node.child_by_field_name("body")
        if type_node is None or body is None:
            return
        type_name = _GENERIC.sub("", self.text(type_node)).strip()
        target = self.seen.get(type_name)
        segments = target.segments if target is not None else owner
        if doc:
            segments.append(self.block(doc[0].start_point.row + 1, outer.start_point.row))
        segments.extend(self.header(outer, body, elide=False))
        trait = node.child_by_field_name("trait")
        if target is not None and trait is not None:
            target.bases.append(_GENERIC.sub("", self.text(trait)).rsplit("::", 1)[-1])
        self.body(
            body.named_children, target.qualname if target else parent, f"{type_name}.", segments
        )

    def whole(
        self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str, kind: str
    ) -> None:
        first, last = outer.start_point.row + 1, outer.end_point.row + 1
        if last - first + 1 <= _WHOLE_TYPE_LINES:
            segments = [self.block(first, last)]
        else:
            body = node.child_by_field_name("body") or node.child_by_field_name("type")
            segments = (
                self.header(outer, body, elide=True)
                if body is not None
                else [self.block(first, first)]
            )
        self.add(outer, node, doc, parent, prefix, kind, segments)

    # ---- text ------------------------------------------------------------------------------

    def block(self, first: int, last: int, max_lines: int | None = None) -> Segment:
        if max_lines is not None and last - first + 1 > max_lines:
            last = first
        return (first, "\n".join(self.lines[first - 1 : last]))

    def header(self, outer: Any, body: Any, elide: bool) -> list[Segment]:
        """The declaration up to its body's ``{``; with ``elide``, then ``...`` and ``}``."""
        line_start = outer.start_byte - outer.start_point.column
        head = self.data[line_start : body.start_byte].decode("utf-8", "replace").rstrip()
        opener = self.data[body.start_byte : body.start_byte + 1].decode("utf-8", "replace")
        if opener in "{(":
            head = f"{head} {opener}" if head and not head.endswith(opener) else head
        first = outer.start_point.row + 1
        last = outer.end_point.row + 1
        indent = _indent(self.lines[first - 1])
        segments: list[Segment] = [(first, head)]
        closing = self.lines[last - 1].strip() if last > first else ""
        if elide:
            segments.append((last, f"{indent}    ..."))
        if closing[:1] in ("}", ")"):
            segments.append((last, indent + closing))
        return segments

    def bases(self, node: Any) -> list[str]:
        found: list[str] = []
        for child in node.named_children:
            if child.type in _HERITAGE or child.type == "type_list":
                stack = [child]
                while stack:
                    current = stack.pop()
                    if current.type in _NAMES:
                        found.append(self.text(current))
                    elif current.type != "type_arguments":
                        stack.extend(reversed(current.named_children))
        return found


def _assigned_value(value: Any) -> Any:
    """The value at the end of an assignment chain (``a = b = function () {}``)."""
    while value is not None and value.type == "assignment_expression":
        value = value.child_by_field_name("right")
    return value


def _braced(body: Any) -> bool:
    """True for a block body (``{ ... }``), False for an expression (``x => x + 1``)."""
    return bool(body.type.endswith(("block", "body")))


def _receiver_type(walk: _Walk, node: Any) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    stack = [receiver]
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            return walk.text(current)
        stack.extend(current.named_children)
    return ""


def _go_kind(type_spec: Any) -> str:
    value = type_spec.child_by_field_name("type")
    if value is None:
        return "type"
    return {"struct_type": "struct", "interface_type": "interface"}.get(value.type, "type")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _label(header: str) -> str:
    label = " ".join(header.split())
    return label.removesuffix("{").removesuffix("(").strip()[:160]


def _doc_summary(comments: list[str]) -> str:
    for comment in comments:
        for line in comment.splitlines():
            stripped = _DOC_MARKS.sub("", line).strip().rstrip("*/").strip()
            if stripped and not stripped.startswith("@"):
                return stripped[:200]
    return ""
