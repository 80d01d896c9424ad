"""Python files with the standard library's ``ast``: classes, functions, methods, imports."""

from __future__ import annotations

import ast
import re
import warnings

from contextfuse.kb.parse_pieces import PIECE_LINES, Statement, add_blocks, first_line_segments
from contextfuse.kb.parsed import Import, ParsedFile, Qualnames, Segment, Symbol, preorder
from contextfuse.kb.parser_versions import PYTHON_ID

__all__ = ["PARSER_ID", "parse_python"]

PARSER_ID = PYTHON_ID

_Def = ast.FunctionDef | ast.AsyncFunctionDef
# Imports inside functions (Django defers many to avoid import cycles); ast gives the
# top-level ones with their names, a line regex the nested ones cheaply.
_NESTED_IMPORT = re.compile(
    r"^[ \t]+(?:from[ \t]+(\.*[\w.]*)[ \t]+import\b|import[ \t]+([\w.]+))", re.MULTILINE
)
_MAX_ATTRIBUTE_LINES = 3  # class attributes longer than this are left out of depth 4
#: A value spanning this many lines is a symbol wherever it is bound (a table, a config
#: dict); shorter module-level ones only when built by a call, a lambda or a comprehension.
_BIG_VALUE_LINES = 5
_BUILT = (ast.Call, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def parse_python(text: str, lines: list[str]) -> ParsedFile | None:
    """Parse Python source; None when it does not parse (the caller indexes it as text).

    ``lines`` is ``text.split("\\n")``: line ``n`` (1-based) is ``lines[n - 1]``.
    """
    try:
        with warnings.catch_warnings():
            # Invalid escapes in the indexed code (``"\d"``) warn at parse time; not ours.
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parsed = ParsedFile(language="python", parser=PARSER_ID)
    body = tree.body
    doc = _docstring(body)
    if doc is not None:
        parsed.head.append(_block(lines, doc.lineno, _end(doc)))
        parsed.summary = _first_line(doc)
    visitor = _Visitor(parsed, lines, _all_names(body))
    statements = visitor.body(body, parent="", in_class=False, owner=parsed.head)
    if doc is not None:  # in the file's signatures already
        statements[0] = _claimed(doc)
    if len(lines) > PIECE_LINES:
        add_blocks(parsed, lines, statements, "", visitor.names)
    parsed.symbols = preorder(parsed.symbols)
    top_imports = {imp.module for imp in parsed.imports}
    for match in _NESTED_IMPORT.finditer(text):
        module = match.group(1) if match.group(1) is not None else match.group(2)
        if module and module not in top_imports:
            top_imports.add(module)
            parsed.imports.append(Import(module))
    return parsed


class _Visitor:
    def __init__(self, parsed: ParsedFile, lines: list[str], exported: set[str]) -> None:
        self.parsed = parsed
        self.lines = lines
        self.names = Qualnames()
        self.exported = exported  # the names ``__all__`` lists

    def body(
        self, stmts: list[ast.stmt], parent: str, in_class: bool, owner: list[Segment]
    ) -> list[Statement]:
        """Visit a module or class body; ``owner`` receives the kept attribute lines.

        Returns the body's statements, marked claimed when a symbol or an import holds them,
        for the blocks of a long container.
        """
        statements: list[Statement] = []
        for stmt in stmts:
            before = len(self.parsed.symbols)
            if isinstance(stmt, _Def):
                self.function(stmt, parent, in_class)
            elif isinstance(stmt, ast.ClassDef):
                self.klass(stmt, parent)
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                self.imports(stmt, top=not parent)
                statements.append(_claimed(stmt))
                continue
            elif isinstance(stmt, ast.If | ast.Try | ast.With):
                # Conditional definitions (``if TYPE_CHECKING:``, ``try: import x``).
                for block in _sub_bodies(stmt):
                    self.body(block, parent, in_class, owner)
            elif (
                isinstance(stmt, ast.Assign | ast.AnnAssign)
                and not self.binding(stmt, parent, in_class)
                and _keep_assignment(stmt, in_class)
            ):
                owner.append(_block(self.lines, stmt.lineno, _end(stmt)))
            if len(self.parsed.symbols) > before or _header_only(stmt):
                statements.append(_claimed(stmt))
            else:
                statements.append(_statement(self.lines, stmt))
        return statements

    def _qualname(self, parent: str, name: str) -> str:
        return self.names.unique(f"{parent}.{name}" if parent else name)

    def binding(self, stmt: ast.Assign | ast.AnnAssign, parent: str, in_class: bool) -> bool:
        """``name = value`` as a symbol when it defines something: True when it did.

        A lambda is a function (a method in a class). Any other value is a variable when it
        spans ``_BIG_VALUE_LINES`` lines, or, at module level, when it makes an instance (a
        call of a capitalised name: ``app = Flask(__name__)``) or is listed in ``__all__``
        and built by a call, a lambda or a comprehension. ``logger =
        logging.getLogger(__name__)``, dunder names and one-token constants stay in their
        container's text.
        """
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        if value is None or not isinstance(targets[0], ast.Name):
            return False
        name = targets[0].id
        if name.startswith("__") and name.endswith("__"):
            return False
        first, last = stmt.lineno, _end(stmt)
        if isinstance(value, ast.Lambda):
            kind = "method" if in_class else "function"
            segments = [_block(self.lines, first, last)]
            label = f"{name} = lambda {_arguments(value.args)}".rstrip()
        else:
            big = last - first + 1 >= _BIG_VALUE_LINES
            exported = name in self.exported and _built(value)
            if not big and (in_class or not (exported or _constructs(value))):
                return False
            kind = "variable"
            segments = (
                [_block(self.lines, first, last)]
                if last - first + 1 <= _MAX_ATTRIBUTE_LINES
                else first_line_segments(self.lines, first, last)
            )
            label = " ".join(self.lines[first - 1].split())[:160]
        qualname = self._qualname(parent, name)
        self.parsed.symbols.append(
            Symbol(
                kind=kind,
                name=name,
                qualname=qualname,
                parent=parent,
                line_start=first,
                line_end=last,
                label=label,
                segments=segments,
            )
        )
        if last - first + 1 > PIECE_LINES:  # a table of hundreds of entries: blocks of them
            add_blocks(self.parsed, self.lines, _parts(self.lines, value), qualname, self.names)
        return True

    def imports(self, stmt: ast.Import | ast.ImportFrom, top: bool) -> None:
        if top:
            self.parsed.head.append(_block(self.lines, stmt.lineno, _end(stmt)))
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self.parsed.imports.append(Import(alias.name))
                if alias.asname:
                    self.parsed.bindings[alias.asname] = (alias.name, "")
            return
        module = "." * stmt.level + (stmt.module or "")
        names = tuple(a.name for a in stmt.names if a.name != "*")
        self.parsed.imports.append(Import(module, names))
        for alias in stmt.names:
            if alias.name != "*":
                self.parsed.bindings[alias.asname or alias.name] = (module, alias.name)

    def function(self, node: _Def, parent: str, in_class: bool) -> None:
        start = _start(node)
        end = _end(node)
        qualname = self._qualname(parent, node.name)
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        doc = _docstring(node.body)
        if start == end:  # ``def f(): return 1`` is its own signature
            segments = [_block(self.lines, start, end)]
        else:
            segments = self._header(node, start)
            if doc is not None and doc.lineno > node.lineno:
                segments.append(_block(self.lines, doc.lineno, _end(doc)))
            if len(node.body) > (1 if doc is not None else 0):
                segments.append((_end(node.body[-1]), self._indent(node) + "..."))
        self.parsed.symbols.append(
            Symbol(
                kind="method" if in_class else "function",
                name=node.name,
                qualname=qualname,
                parent=parent,
                line_start=start,
                line_end=end,
                label=f"{prefix} {node.name}({_arguments(node.args)})",
                summary=_first_line(doc) if doc is not None else "",
                segments=segments,
            )
        )

    def klass(self, node: ast.ClassDef, parent: str) -> None:
        qualname = self._qualname(parent, node.name)
        doc = _docstring(node.body)
        segments = self._header(node, _start(node))
        if doc is not None and doc.lineno > node.lineno:
            segments.append(_block(self.lines, doc.lineno, _end(doc)))
        bases = [ast.unparse(b) for b in node.bases]
        symbol = Symbol(
            kind="class",
            name=node.name,
            qualname=qualname,
            parent=parent,
            line_start=_start(node),
            line_end=_end(node),
            label=f"class {node.name}" + (f"({', '.join(bases)})" if bases else ""),
            summary=_first_line(doc) if doc is not None else "",
            segments=segments,
            bases=[b.rsplit(".", 1)[-1] for b in bases],
        )
        self.parsed.symbols.append(symbol)
        count = len(self.parsed.symbols)
        self.body(node.body, qualname, in_class=True, owner=symbol.segments)
        kept = len(symbol.segments) - len(segments) + (len(self.parsed.symbols) - count)
        if kept == 0 and len(node.body) > (1 if doc is not None else 0):
            symbol.segments.append((_end(node), self._indent(node) + "..."))

    def _header(self, node: _Def | ast.ClassDef, start: int) -> list[Segment]:
        """Decorators and the signature, verbatim, up to the body."""
        first = node.body[0]
        if first.lineno == node.lineno:  # ``def f(): return 1``: cut the line at the body
            line = self.lines[first.lineno - 1]
            cut = line.encode("utf-8")[: first.col_offset].decode("utf-8", "replace").rstrip()
            head = [*self.lines[start - 1 : first.lineno - 1], cut]
            return [(start, "\n".join(head))]
        stop = first.lineno - 1
        if isinstance(first, _Def | ast.ClassDef) and first.decorator_list:
            stop = min(d.lineno for d in first.decorator_list) - 1
        while stop > node.lineno and _blank_or_comment(self.lines[stop - 1]):
            stop -= 1
        return [_block(self.lines, start, stop)]

    def _indent(self, node: _Def | ast.ClassDef) -> str:
        first = node.body[0]
        if first.lineno > node.lineno:
            line = self.lines[first.lineno - 1]
            return line[: len(line) - len(line.lstrip())]
        line = self.lines[node.lineno - 1]
        return line[: len(line) - len(line.lstrip())] + "    "


def _claimed(stmt: ast.stmt) -> Statement:
    return Statement(_start(stmt), _end(stmt), claimed=True)


def _statement(lines: list[str], node: ast.stmt | ast.expr, first: int | None = None) -> Statement:
    """A statement (or an entry of a literal) a block may hold, with its parts to open it.

    It starts at the comment lines right above it: a block takes them with it.
    """
    start = first if first is not None else node.lineno
    while start > 1 and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return Statement(start, _end(node), parts=lambda: _parts(lines, node))


def _parts(lines: list[str], node: ast.stmt | ast.expr) -> list[Statement]:
    """What a long statement is made of: a compound statement's bodies, a literal's entries,
    a call's arguments (found through an assignment, an expression statement or a return).
    """
    if isinstance(node, _COMPOUND):
        return [_statement(lines, s) for body in _compound_bodies(node) for s in body]
    value = getattr(node, "value", None) if isinstance(node, ast.stmt) else node
    if isinstance(value, ast.Dict):
        return [
            _statement(lines, v, k.lineno if k is not None else None)
            for k, v in zip(value.keys, value.values, strict=True)
        ]
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return [_statement(lines, e) for e in value.elts]
    if isinstance(value, ast.Call):
        return [_statement(lines, a) for a in value.args] + [
            _statement(lines, k.value, k.lineno) for k in value.keywords
        ]
    return []


def _header_only(stmt: ast.stmt) -> bool:
    """Imports (``if TYPE_CHECKING:``, ``try: import x``) and dunder assignments
    (``__all__``, ``__version__``): module metadata the file's signatures show, not code."""
    if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return all(isinstance(t, ast.Name) and t.id.startswith("__") for t in targets)
    if isinstance(stmt, ast.If | ast.Try):
        inner = [s for body in _sub_bodies(stmt) for s in body]
        return bool(inner) and all(_header_only(s) for s in inner)
    return False


def _all_names(body: list[ast.stmt]) -> set[str]:
    """The names a module's ``__all__ = [...]`` lists."""
    names: set[str] = set()
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and any(_is_all(t) for t in stmt.targets)
            and isinstance(stmt.value, ast.List | ast.Tuple)
        ):
            names.update(
                e.value
                for e in stmt.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return names


def _constructs(value: ast.expr) -> bool:
    """A call of a capitalised name (``Flask(__name__)``, ``click.Group()``): an instance."""
    if not isinstance(value, ast.Call):
        return False
    callee = value.func
    name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
    return str(name).lstrip("_")[:1].isupper()


def _built(value: ast.expr) -> bool:
    return any(isinstance(node, _BUILT) for node in ast.walk(value))


def _compound_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement, ``else`` and handlers included."""
    if isinstance(stmt, ast.If | ast.Try | ast.With):
        return _sub_bodies(stmt)
    return [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]


def _sub_bodies(stmt: ast.If | ast.Try | ast.With) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    return [stmt.body]


def _keep_assignment(stmt: ast.Assign | ast.AnnAssign, in_class: bool) -> bool:
    if _end(stmt) - stmt.lineno + 1 > _MAX_ATTRIBUTE_LINES:
        return False
    if in_class:
        return True  # class attributes (model fields, settings) are part of its interface
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    # Module level: constants and ``__all__`` only; other assignments are code.
    return all((isinstance(t, ast.Name) and t.id.isupper()) or _is_all(t) for t in targets)


def _is_all(target: ast.expr) -> bool:
    return isinstance(target, ast.Name) and target.id == "__all__"


def _docstring(body: list[ast.stmt]) -> ast.Expr | None:
    if body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return body[0]
    return None


def _first_line(doc: ast.Expr) -> str:
    value = doc.value
    assert isinstance(value, ast.Constant)
    for line in str(value.value).strip().splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt | ast.expr) -> int:
    return node.end_lineno or node.lineno


def _block(lines: list[str], first: int, last: int) -> Segment:
    return (first, "\n".join(lines[first - 1 : last]))


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _arguments(args: ast.arguments) -> str:
    """Argument names only (no annotations or defaults): the outline stays one short line."""
    names = [a.arg for a in args.posonlyargs]
    if args.posonlyargs:
        names.append("/")
    names.extend(a.arg for a in args.args)
    if args.vararg:
        names.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        names.append("*")
    names.extend(a.arg for a in args.kwonlyargs)
    if args.kwarg:
        names.append(f"**{args.kwarg.arg}")
    return ", ".join(names)
