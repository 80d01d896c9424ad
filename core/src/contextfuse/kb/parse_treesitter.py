"""JavaScript, TypeScript, Go, Rust and Java with tree-sitter grammar wheels (optional).

Each language needs ``tree-sitter`` and its grammar wheel (the ``treesitter`` extra); when
either is missing, :func:`parser_for` returns None and the file is indexed as plain text.
Only declarations are walked in Python (top level and class bodies), so parsing stays fast.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import Any

import attrs

from contextfuse.kb.parse_pieces import (
    DECLARATION_LINES,
    PIECE_LINES,
    Statement,
    add_blocks,
    first_line_segments,
)
from contextfuse.kb.parsed import Import, ParsedFile, Qualnames, Segment, Symbol, preorder
from contextfuse.kb.parser_versions import tree_sitter_id

__all__ = ["LANGUAGES", "TreeSitterParser", "missing_reason", "parser_for"]

_WHOLE_TYPE_LINES = 40  # struct/interface/enum declarations up to this size stay whole at depth 4
_SHORT_FUNCTION_LINES = 2  # functions this short are their own signature
#: A value spanning this many lines is a symbol wherever it is bound (a table, a config
#: object, a class field holding a callback); shorter ones only when built (see ``built``).
_BIG_VALUE_LINES = 5
_SHORT_VALUE_LINES = 3  # bound values up to this size are their own depth-4 text


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
    #: Top-level statements that import or describe the module (a Rust crate attribute):
    #: never part of a block.
    import_statements: frozenset[str] = frozenset()
    #: Node types of a value built at run time (a call, ``new``, a regex, a struct literal):
    #: a top-level binding of such a value is a symbol even when it is one line.
    built: frozenset[str] = frozenset()
    #: Values that are functions (arrow functions, closures, lambdas, Go func literals).
    function_values: frozenset[str] = frozenset()
    #: Values that are classes (JavaScript class expressions, Java anonymous classes).
    class_values: frozenset[str] = frozenset()
    #: Single-token literals: a typed export of one of these is still a one-token constant.
    literals: frozenset[str] = frozenset()


_JS_IMPORTS = (
    re.compile(r"""\bfrom\s*['"]([^'"\n]+)['"]"""),
    re.compile(r"""\bimport\s*\(?\s*['"]([^'"\n]+)['"]"""),
    re.compile(r"""\brequire\s*\(\s*['"]([^'"\n]+)['"]"""),
)


_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_LITERALS = frozenset(
    {
        "number",
        "string",
        "true",
        "false",
        "null",
        "undefined",
        "int_literal",
        "float_literal",
        "interpreted_string_literal",
        "raw_string_literal",
        "rune_literal",
        "nil",
        "iota",
        "integer_literal",
        "string_literal",
        "char_literal",
        "boolean_literal",
        "decimal_integer_literal",
        "hex_integer_literal",
        "decimal_floating_point_literal",
        "character_literal",
        "null_literal",
    }
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
            "internal_module": "namespace",  # ``namespace X { ... }``
            "module": "module",  # ``declare module "x" { ... }``
        },
        types={"type_alias_declaration": "type", "enum_declaration": "enum"},
        wrappers=frozenset({"export_statement", "ambient_declaration"}),
        fields=frozenset({"public_field_definition", "field_definition", "property_signature"}),
        imports=_JS_IMPORTS,
        import_statements=frozenset({"import_statement", "import_alias"}),
        built=frozenset(
            {"call_expression", "new_expression", "regex", "template_substitution", "await"}
        ),
        function_values=_JS_FUNCTION_VALUES,
        class_values=frozenset({"class"}),
        literals=_LITERALS,
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
        import_statements=frozenset({"import_declaration", "package_clause"}),
        built=frozenset({"call_expression", "composite_literal", "func_literal"}),
        function_values=frozenset({"func_literal"}),
        literals=_LITERALS,
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
        import_statements=frozenset(
            {"use_declaration", "extern_crate_declaration", "inner_attribute_item"}
        ),
        built=frozenset({"call_expression", "struct_expression", "macro_invocation"}),
        function_values=frozenset({"closure_expression"}),
        literals=_LITERALS,
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
        import_statements=frozenset({"import_declaration", "package_declaration"}),
        built=frozenset({"method_invocation", "object_creation_expression"}),
        function_values=frozenset({"lambda_expression"}),
        class_values=frozenset({"object_creation_expression"}),  # with a class body
        literals=_LITERALS,
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
_METHODS = frozenset({"method_definition"})  # in a JavaScript object literal
_CONSTRUCTIONS = frozenset({"new_expression", "object_creation_expression", "struct_expression"})
_WRAPPED_VALUES = frozenset(
    {"unary_expression", "parenthesized_expression", "await_expression", "reference_expression"}
)
_CALLEE_PARTS = re.compile(r"\.|::")
_KEYS = frozenset({"property_identifier", "string", "identifier"})
_PART_DEPTH = 5  # how far below a statement its parts are looked for
# ``require("x")``, ``import("x")``, and the same wrapped by a compiler
# (``__importStar(require("x"))``, ``require("x").y``).
_IMPORT_CALL = re.compile(r"""(?<![\w$.])(?:require|import)\s*\(\s*['"`]""")
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
        self.parser_id = tree_sitter_id(language)

    def parse(self, text: str, lines: list[str]) -> ParsedFile:
        """Parse one file (tree-sitter always produces a tree, errors included)."""
        data = text.encode("utf-8")
        tree = self.parser.parse(data)
        parsed = ParsedFile(self.language, self.parser_id)
        walk = _Walk(self.spec, data, lines, parsed, self.parse_range)
        walk.body(tree.root_node.named_children, parent="", prefix="", owner=None, span=len(lines))
        parsed.symbols = preorder(parsed.symbols)
        parsed.imports = [Import(m) for m in _imports(self.spec, self.language, text)]
        if not parsed.summary:
            parsed.summary = walk.file_doc
        return parsed

    def parse_range(self, data: bytes, node: Any) -> Any:
        """The tree of ``data`` parsed inside ``node`` only (a Rust macro's ``{ ... }``), with
        positions in the whole file; None when tree-sitter cannot restrict a parse."""
        tree_sitter = importlib.import_module("tree_sitter")
        start_row, start_column = node.start_point
        end_row, end_column = node.end_point
        inner = tree_sitter.Range(
            (start_row, start_column + 1),
            (end_row, max(end_column - 1, 0)),
            node.start_byte + 1,
            node.end_byte - 1,
        )
        try:
            self.parser.included_ranges = [inner]
            return self.parser.parse(data)
        except (ValueError, AttributeError):
            return None
        finally:
            self.parser.included_ranges = []


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
    def __init__(
        self,
        spec: _Spec,
        data: bytes,
        lines: list[str],
        parsed: ParsedFile,
        reparse: Callable[[bytes, Any], Any],
    ) -> None:
        self.spec = spec
        self.data = data
        self.lines = lines
        self.parsed = parsed
        self.seen: dict[str, Symbol] = {}
        self.names = Qualnames()
        self.file_doc = ""
        self.in_class = False  # walking the members of a class, interface or trait
        self.in_function = False  # walking the declarations of a long function
        self.reparse = reparse  # parses the file inside one node only (a macro's body)

    def text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def body(
        self,
        children: Iterable[Any],
        parent: str,
        prefix: str,
        owner: list[Segment] | None,
        span: int,
    ) -> None:
        """Visit declarations; ``prefix`` qualifies names (``Type.`` inside an impl).

        In a file or namespace longer than a piece (``span`` lines), the statements no
        declaration holds become blocks.
        """
        top = owner is None
        owner = self.parsed.head if owner is None else owner
        docs: list[Any] = []
        statements: list[Statement] = []
        for child in children:
            kind = child.type
            if top and kind in _COMMENTS and not self.file_doc:
                self.file_doc = _doc_summary([self.text(child)])
            top = top and kind in _COMMENTS
            if kind in _COMMENTS:
                if docs and docs[-1].end_point.row + 1 < child.start_point.row:
                    docs = []
                docs.append(child)
                statements.append(self.statement(child))
                continue
            doc = docs if docs and docs[-1].end_point.row + 1 >= child.start_point.row else []
            docs = []
            before = len(self.parsed.symbols)
            self.declaration(child, child, doc, parent, prefix, owner)
            wrapped = None if len(self.parsed.symbols) > before else self.wrapped_body(child)
            if wrapped is not None:
                # A module wrapped in a function (an IIFE, a UMD or AMD factory): its body is
                # walked as the file's own, when it declares something.
                lines = wrapped.end_point.row - wrapped.start_point.row + 1
                was, self.in_function = self.in_function, True
                try:
                    self.body(wrapped.named_children, parent, prefix, owner, lines)
                finally:
                    self.in_function = was
            if len(self.parsed.symbols) > before or self.imports_only(child):
                statements.append(_claimed(child))
            else:
                statements.append(self.statement(child))
        # A long function's other statements become blocks only when it declares symbols
        # of its own (a module in a closure), not in every long function.
        declares = not self.in_function or any(s.claimed for s in statements)
        if span > PIECE_LINES and not self.in_class and declares:
            add_blocks(self.parsed, self.lines, statements, parent, self.names)

    def wrapped_body(self, node: Any) -> Any:
        """The braced body of the function value longer than a piece that makes up most of
        an expression statement (``(function () { ... })()``, ``define([...], function
        () { ... })``), if there is one."""
        if node.type != "expression_statement" or not self.spec.function_values:
            return None
        if node.end_point.row - node.start_point.row + 1 <= PIECE_LINES:
            return None
        values = self.spec.function_values
        function = next((d for d in _spanning(node) if d.type in values), None)
        body = function.child_by_field_name("body") if function is not None else None
        return body if body is not None and _braced(body) else None

    def imports_only(self, node: Any) -> bool:
        """An import statement (Rust's ``mod foo;`` too), or a declaration of imports only."""
        if node.type in self.spec.import_statements:
            return True
        if node.type == "mod_item":
            return node.child_by_field_name("body") is None
        if node.type not in ("lexical_declaration", "variable_declaration"):
            return False
        values = [d.child_by_field_name("value") for d in node.named_children]
        return bool(values) and all(v is not None and _is_import(self.text(v)) for v in values)

    def statement(self, node: Any) -> Statement:
        """``node`` as a statement a block may hold, with its parts to open it."""
        return Statement(
            node.start_point.row + 1,
            node.end_point.row + 1,
            weak=node.type in _COMMENTS,
            parts=lambda: [self.statement(part) for part in _parts(node)],
        )

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
            value = node.child_by_field_name("value")
            if inner is None and value is not None:  # ``export default <expression>``
                self.binding(outer, node, value, "default", doc, parent, prefix, exported=True)
                return
            if inner is None:
                inner = next((c for c in node.named_children if c.type not in _COMMENTS), None)
            if inner is not None:
                self.declaration(outer, inner, doc, parent, prefix, owner)
            return
        if kind in spec.functions:
            self.function(outer, node, doc, parent, prefix)
        elif kind in ("lexical_declaration", "variable_declaration"):
            declarators = [c for c in node.named_children if c.type == "variable_declarator"]
            exported = outer.type in spec.wrappers
            for declarator in declarators:
                self.declarator(
                    outer if len(declarators) == 1 else declarator,
                    declarator,
                    doc if len(declarators) == 1 else [],
                    parent,
                    prefix,
                    exported,
                )
        elif kind in ("var_declaration", "const_declaration"):  # Go
            self.go_values(outer, node, doc, parent, prefix)
        elif kind in ("const_item", "static_item"):  # Rust
            exported = any(c.type == "visibility_modifier" for c in node.named_children)
            self.declarator(outer, node, doc, parent, prefix, exported)
        elif kind == "macro_definition":  # Rust ``macro_rules! name { ... }``
            first, last = outer.start_point.row + 1, outer.end_point.row + 1
            segments = self.value_segments(first, last)
            symbol = self.add(outer, node, doc, parent, prefix, "macro", segments)
            self.open_if_long(symbol, node)
        elif kind == "expression_statement" and node.named_children:
            expression = node.named_children[0]
            if expression.type == "assignment_expression":
                self.assignment(outer, expression, doc, parent, prefix)
            elif expression.type in spec.containers:  # TypeScript ``namespace X { ... }``
                container = spec.containers[expression.type]
                self.container(outer, expression, doc, parent, prefix, container)
        elif kind == "macro_invocation" and self.spec.grammar == "tree_sitter_rust":
            self.macro_items(outer, node, parent, prefix, owner)
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
        elif kind in spec.fields and not self.field(outer, node, doc, parent, prefix):
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
        qualname = self.names.unique(f"{prefix}{name}")
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
        self.seen.setdefault(qualname, symbol)
        self.parsed.symbols.append(symbol)
        return symbol

    def function(
        self,
        outer: Any,
        node: Any,
        doc: list[Any],
        parent: str,
        prefix: str,
        name: str | None = None,
        value: Any = None,
    ) -> None:
        """A function or method; ``value`` is the function value of a binding, if it is one."""
        if node.type == "method_declaration" and self.spec.grammar == "tree_sitter_go":
            receiver = _receiver_type(self, node)
            if receiver:
                parent = receiver if receiver in self.seen else parent
                prefix = f"{receiver}."
        inside = self.seen.get(parent)
        nested = inside is not None and inside.kind == "function"
        kind = "method" if (prefix or parent) and not nested else "function"
        first, last = outer.start_point.row + 1, outer.end_point.row + 1
        body = (value if value is not None else node).child_by_field_name("body")
        if body is None or last - first + 1 <= _SHORT_FUNCTION_LINES or not _braced(body):
            segments = [self.block(first, last)]
        else:
            segments = self.header(outer, body, elide=True)
        symbol = self.add(outer, node, doc, parent, prefix, kind, segments, name)
        if body is not None and last - first + 1 > PIECE_LINES and _braced(body):
            self.inner_declarations(body, symbol)

    def inner_declarations(self, body: Any, symbol: Symbol) -> None:
        """The functions (and classes, big values) a function longer than a piece declares
        in its body, symbols of their own: a closure that defines a module's functions
        (``function enablePatches() { function applyPatches_() ... }``) would otherwise show
        them only within the whole."""
        was = self.in_class, self.in_function
        self.in_class, self.in_function = False, True
        try:
            lines = body.end_point.row - body.start_point.row + 1
            self.body(body.named_children, symbol.qualname, f"{symbol.qualname}.", [], lines)
        finally:
            self.in_class, self.in_function = was

    def declarator(
        self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str, exported: bool
    ) -> None:
        """A ``name = value`` declaration (JavaScript declarator, Rust const or static)."""
        name_node = node.child_by_field_name("name")
        value = _assigned_value(node.child_by_field_name("value"))
        if name_node is None or name_node.type not in _NAMES:
            return  # destructuring patterns: no one name to give
        typed = node.child_by_field_name("type") is not None and self.spec.grammar.endswith(
            "typescript"
        )
        if value is None:  # ``export declare const x: T;`` (a .d.ts file): the API it states
            if typed and exported:
                first, last = outer.start_point.row + 1, outer.end_point.row + 1
                segments = self.value_segments(first, last)
                self.add(outer, node, doc, parent, prefix, "variable", segments)
            return
        self.binding(outer, node, value, self.text(name_node), doc, parent, prefix, exported, typed)

    def binding(
        self,
        outer: Any,
        node: Any,
        value: Any,
        name: str,
        doc: list[Any],
        parent: str,
        prefix: str,
        exported: bool,
        typed: bool = False,
    ) -> Symbol | None:
        """A value bound to a name: a function, a class, or a variable when it is worth one.

        A function or class value is always a symbol. Any other value is one when it spans
        ``_BIG_VALUE_LINES`` lines; outside a class, a shorter one is when it holds functions,
        when it is exported and built at run time (a call, ``new``, a regex, a struct literal)
        or typed (not a one-token literal), and when it makes an instance (:meth:`constructs`).
        Imports (``require(...)``) and one-token constants are not symbols.
        """
        spec = self.spec
        if value.type in spec.function_values:
            self.function(outer, node, doc, parent, prefix, name, value)
            return None
        class_body = value.child_by_field_name("body") if value.type in spec.class_values else None
        if value.type in spec.class_values and value.type != "class":
            class_body = next((c for c in value.named_children if c.type == "class_body"), None)
        if class_body is not None:
            return self.members(outer, node, doc, parent, prefix, name, class_body)
        first, last = outer.start_point.row + 1, outer.end_point.row + 1
        if not self.worth_a_symbol(value, last - first + 1, exported, typed):
            return None
        segments = self.value_segments(first, last)
        symbol = self.add(outer, node, doc, parent, prefix, "variable", segments, name)
        if value.type == "object":  # JavaScript object literal: its methods are members
            self.object_members(value, symbol, _members_prefix(symbol.qualname))
        else:
            self.open_if_long(symbol, value)
        return symbol

    def open_if_long(self, symbol: Symbol, node: Any, longer_than: int = PIECE_LINES) -> None:
        """Blocks of the parts of a symbol longer than ``longer_than`` lines (a table's
        entries, a macro's rules), so that no part of it is reachable only whole."""
        if symbol.line_end - symbol.line_start + 1 > longer_than:
            parts = [self.statement(part) for part in _parts(node)]
            add_blocks(self.parsed, self.lines, parts, symbol.qualname, self.names)

    def worth_a_symbol(self, value: Any, lines: int, exported: bool, typed: bool) -> bool:
        if _is_import(self.text(value)) and lines < _BIG_VALUE_LINES:
            return False
        if lines >= _BIG_VALUE_LINES:
            return True
        if self.in_class:
            return False
        spec = self.spec
        if _contains(value, spec.function_values | spec.class_values | _METHODS):
            return True  # a value holding functions defines behaviour
        if exported:
            return (typed and value.type not in spec.literals) or _contains(value, spec.built)
        return self.constructs(value)

    def constructs(self, value: Any) -> bool:
        """Whether a one-line value makes an instance: ``new X()``, ``express.Router()``,
        ``Lazy::new(...)``, ``&Server{}``: a callee or type whose name is capitalised.

        An unexported one-line value is a symbol only then (``const router =
        express.Router()``); one built by a lower-case helper (``const log = getLogger()``)
        is an ordinary line of its file.
        """
        node = value
        while node.type in _WRAPPED_VALUES and node.named_children:
            node = node.named_children[-1]
        if node.type in _CONSTRUCTIONS:
            return True
        named = None
        if node.type == "call_expression":
            named = node.child_by_field_name("function")
        elif node.type == "composite_literal":
            named = node.child_by_field_name("type")
        return named is not None and _capitalised(self.text(named))

    def value_segments(self, first: int, last: int) -> list[Segment]:
        if last - first + 1 <= _SHORT_VALUE_LINES:
            return [self.block(first, last)]
        return first_line_segments(self.lines, first, last)

    def members(
        self,
        outer: Any,
        node: Any,
        doc: list[Any],
        parent: str,
        prefix: str,
        name: str,
        body: Any,
    ) -> Symbol:
        """A class value (a class expression, a Java anonymous class) and its members."""
        segments = self.header(outer, body, elide=False)
        symbol = self.add(outer, node, doc, parent, prefix, "class", segments, name)
        self.walk_members(body, symbol, outer)
        return symbol

    def walk_members(self, body: Any, symbol: Symbol, outer: Any, in_class: bool = True) -> None:
        """The declarations in ``body``, members of ``symbol`` (whose source is ``outer``)."""
        self.nested(body, symbol.qualname, f"{symbol.qualname}.", symbol.segments, outer, in_class)

    def nested(
        self,
        body: Any,
        parent: str,
        prefix: str,
        segments: list[Segment],
        outer: Any,
        in_class: bool,
    ) -> None:
        """:meth:`body` of a container: of a class (``in_class``), a namespace or an impl."""
        was = self.in_class, self.in_function
        self.in_class, self.in_function = in_class, False
        try:
            span = outer.end_point.row - outer.start_point.row + 1
            self.body(body.named_children, parent, prefix, segments, span)
        finally:
            self.in_class, self.in_function = was

    def object_members(self, value: Any, symbol: Symbol, prefix: str) -> None:
        """Methods of a JavaScript object literal (``{ m() {...}, k: () => ... }``)."""
        statements: list[Statement] = []
        for entry in value.named_children:
            before = len(self.parsed.symbols)
            if entry.type == "method_definition":
                self.function(entry, entry, [], symbol.qualname, prefix)
            elif entry.type == "pair":
                key = entry.child_by_field_name("key")
                member = _assigned_value(entry.child_by_field_name("value"))
                if (
                    key is not None
                    and member is not None
                    and key.type in _KEYS
                    and member.type in self.spec.function_values
                ):
                    name = self.text(key).strip("'\"")
                    self.function(entry, entry, [], symbol.qualname, prefix, name, member)
            if len(self.parsed.symbols) > before:
                statements.append(_claimed(entry))
            else:
                statements.append(self.statement(entry))
        if symbol.line_end - symbol.line_start + 1 > PIECE_LINES:
            add_blocks(self.parsed, self.lines, statements, symbol.qualname, self.names)

    def field(self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str) -> bool:
        """A class field holding a function, an anonymous class or a big value: a symbol."""
        declarator = node.child_by_field_name("declarator")
        if declarator is not None:  # Java: ``Type name = value;`` (one declarator only)
            declarators = [c for c in node.named_children if c.type == "variable_declarator"]
            if len(declarators) != 1:
                return False
            name_node = declarator.child_by_field_name("name")
            value = declarator.child_by_field_name("value")
        else:  # JavaScript and TypeScript class fields
            name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
            value = node.child_by_field_name("value")
        if name_node is None or value is None:
            return False
        before = len(self.parsed.symbols)
        self.binding(outer, node, value, self.text(name_node), doc, parent, prefix, False)
        return len(self.parsed.symbols) > before

    def assignment(self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str) -> None:
        """JavaScript's ``proto.handle = function handle(req, res) {...}`` and kin.

        CommonJS modules and pre-class code define most of their functions this way
        (``exports.x = ...``, ``Layer.prototype.match = ...``); the target names the symbol,
        ``.prototype`` left out (``Layer.match``). Other values follow :meth:`binding`, with
        ``module.exports`` and ``exports.x`` counting as exported.
        """
        left = node.child_by_field_name("left")
        value = _assigned_value(node.child_by_field_name("right"))
        if left is None or value is None:
            return
        target = self.text(left).replace(".prototype.", ".")
        if not _JS_TARGET.fullmatch(target):
            return  # computed members (``obj[key] = ...``) name nothing stable
        owner, _, name = target.rpartition(".")
        qualifier = f"{prefix}{owner}." if owner else prefix
        if value.type in self.spec.function_values:
            self.function(outer, node, doc, parent, qualifier, name, value)
            return
        exported = target == "module.exports" or target.startswith("exports.")
        self.binding(outer, node, value, name, doc, parent, qualifier, exported)

    def go_values(self, outer: Any, node: Any, doc: list[Any], parent: str, prefix: str) -> None:
        """Go ``var``/``const`` declarations, one spec or a ``( ... )`` group of them."""
        specs = [c for c in node.named_children if c.type in ("var_spec", "const_spec")]
        for group in node.named_children:
            if group.type == "var_spec_list":
                specs.extend(c for c in group.named_children if c.type == "var_spec")
        for spec in specs:
            names = spec.children_by_field_name("name")
            values = spec.child_by_field_name("value")
            if len(names) != 1 or values is None or len(values.named_children) != 1:
                continue  # ``a, b = 1, 2`` or no value: no one value to name
            name = self.text(names[0])
            if name == "_":
                continue  # ``var _ I = (*T)(nil)``: an assertion, not a definition
            single = len(specs) == 1
            self.binding(
                outer if single else spec,
                spec,
                values.named_children[0],
                name,
                doc if single else [],
                parent,
                prefix,
                exported=name[:1].isupper(),
            )

    def macro_items(
        self, outer: Any, node: Any, parent: str, prefix: str, owner: list[Segment]
    ) -> None:
        """Items written inside a Rust macro call (``cfg_if! { ... }``, ``cfg_rt! { ... }``).

        tree-sitter reads a macro's body as tokens; parsed again as Rust, inside the braces
        only, the items there are declarations of the module like any other.
        """
        body = next((c for c in node.named_children if c.type == "token_tree"), None)
        if (
            body is None
            or self.reparse is None
            or self.data[body.start_byte : body.start_byte + 1] != b"{"
        ):
            return
        tree = self.reparse(self.data, body)
        if tree is not None:
            span = outer.end_point.row - outer.start_point.row + 1
            self.body(tree.root_node.named_children, parent, prefix, owner, span)

    def container(
        self,
        outer: Any,
        node: Any,
        doc: list[Any],
        parent: str,
        prefix: str,
        kind: str,
    ) -> None:
        body = node.child_by_field_name("body")
        if body is None:
            if kind != "module":  # ``mod foo;`` is an import, not a declaration
                self.whole(outer, node, doc, parent, prefix, kind)
            return
        name_node = node.child_by_field_name("name")
        name = self.text(name_node).strip("'\"") if name_node is not None else kind
        segments = self.header(outer, body, elide=False)
        symbol = self.add(outer, node, doc, parent, prefix, kind, segments, name)
        self.walk_members(body, symbol, outer, in_class=kind not in ("namespace", "module"))

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
        owner_name = target.qualname if target else parent
        self.nested(body, owner_name, f"{type_name}.", segments, outer, in_class=True)

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
        symbol = self.add(outer, node, doc, parent, prefix, kind, segments)
        self.open_if_long(symbol, node, DECLARATION_LINES)  # a generated 1,000-variant enum

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


def _claimed(node: Any) -> Statement:
    return Statement(node.start_point.row + 1, node.end_point.row + 1, claimed=True)


def _parts(node: Any) -> Sequence[Any]:
    """The statements or entries that make up most of ``node``: what a block opens into.

    The descendant (a few levels down) with the most named children among those spanning at
    least half of ``node``'s lines: a callback's body, an object's pairs, an array's items.
    """
    best: Sequence[Any] = ()
    for descendant in _spanning(node):
        entries = descendant.named_children
        if len(entries) > max(len(best), 1):
            best = entries
    return best


def _spanning(node: Any) -> Iterator[Any]:
    """The descendants of ``node`` (a few levels down, shallowest first) that span at least
    half of its lines, through others that do."""
    lines = node.end_point.row - node.start_point.row + 1
    frontier = [node]
    for _ in range(_PART_DEPTH):
        below: list[Any] = []
        for current in frontier:
            for child in current.named_children:
                if 2 * (child.end_point.row - child.start_point.row + 1) >= lines:
                    yield child
                    below.append(child)
        frontier = below


def _contains(node: Any, types: frozenset[str]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in types:
            return True
        stack.extend(current.named_children)
    return False


def _capitalised(callee: str) -> bool:
    """``a.b.Router`` and ``Lazy::new`` name a type; ``logging.getLogger`` does not."""
    parts = [p for p in _CALLEE_PARTS.split(_GENERIC.sub("", callee)) if p]
    if not parts:
        return False
    name = parts[-1]
    if "::" in callee and len(parts) > 1 and not name[:1].isupper():
        name = parts[-2]  # ``Type::new(...)``
    return name.lstrip("$_")[:1].isupper()


def _is_import(text: str) -> bool:
    return bool(_IMPORT_CALL.search(text))


def _members_prefix(qualname: str) -> str:
    """``Foo.prototype = {...}``: its methods are ``Foo.m``, as assigned ones would be."""
    return f"{qualname.removesuffix('.prototype')}."


def _assigned_value(value: Any) -> Any:
    """The value at the end of an assignment chain (``a = b = function () {}``), inside
    its parentheses (``var f = (function f() {})``)."""
    while value is not None and value.type in ("assignment_expression", "parenthesized_expression"):
        if value.type == "assignment_expression":
            value = value.child_by_field_name("right")
        elif value.named_child_count == 1:
            value = value.named_children[0]
        else:
            break
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
