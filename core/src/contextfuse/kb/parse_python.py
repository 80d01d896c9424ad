"""Python files with the standard library's ``ast``: classes, functions, methods, imports."""

from __future__ import annotations

import ast
import re
import warnings

from contextfuse.kb.parsed import Import, ParsedFile, Segment, Symbol
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
    _Visitor(parsed, lines).body(body, parent="", in_class=False, owner=parsed.head)
    top_imports = {imp.module for imp in parsed.imports}
    for match in _NESTED_IMPORT.finditer(text):
        module = match.group(1) if match.group(1) is not None else match.group(2)
        if module and module not in top_imports:
            top_imports.add(module)
            parsed.imports.append(Import(module))
    return parsed


class _Visitor:
    def __init__(self, parsed: ParsedFile, lines: list[str]) -> None:
        self.parsed = parsed
        self.lines = lines
        self.seen: set[str] = set()

    def body(
        self, stmts: list[ast.stmt], parent: str, in_class: bool, owner: list[Segment]
    ) -> None:
        """Visit a module or class body; ``owner`` receives the kept attribute lines."""
        for stmt in stmts:
            if isinstance(stmt, _Def):
                self.function(stmt, parent, in_class)
            elif isinstance(stmt, ast.ClassDef):
                self.klass(stmt, parent)
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                self.imports(stmt, top=not parent)
            elif isinstance(stmt, ast.If | ast.Try | ast.With):
                # Conditional definitions (``if TYPE_CHECKING:``, ``try: import x``).
                for block in _sub_bodies(stmt):
                    self.body(block, parent, in_class, owner)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign) and _keep_assignment(stmt, in_class):
                owner.append(_block(self.lines, stmt.lineno, _end(stmt)))

    def _qualname(self, parent: str, name: str, line: int) -> str:
        qualname = f"{parent}.{name}" if parent else name
        if qualname in self.seen:  # redefined in another branch: keep URIs unique
            qualname = f"{qualname}@L{line}"
        self.seen.add(qualname)
        return qualname

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
        qualname = self._qualname(parent, node.name, node.lineno)
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
        qualname = self._qualname(parent, node.name, node.lineno)
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


def _start(node: _Def | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _end(node: ast.stmt) -> int:
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
