"""Graph facts of one file, and their resolution into edges over the whole repository.

Facts are what a file says about other code: imports (module specifiers and names), the
names each symbol calls or references, and class bases. They are stored per file; edges are
resolved from all files' facts together, because a name is unambiguous only with respect to
the whole repository.

Resolution, for a name used in a symbol: a symbol of the same file, then a name bound by an
import, then the one symbol of the repository with that name. A call on the symbol's own
object (``self.name(...)``, ``this.name(...)``, ``Self::name(...)``, a Go method's receiver;
stored as ``@name``) resolves to the method of the nearest enclosing type that has one, then
to the only method so named; so does a bare ``name(...)`` in a Java class, before the other
rules. ``.name(...)`` on anything else resolves to the only method so named. Anything else
is ambiguous and left out.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import attrs

from contextfuse.kb.parsed import ParsedFile
from contextfuse.kb.receivers import TYPE_KINDS, TypedCalls
from contextfuse.kb.render import NodeDraft

__all__ = [
    "EdgeRow",
    "FileFacts",
    "NodeKey",
    "build_edges",
    "extract_facts",
    "go_module",
    "iter_edges",
]

_CALL = re.compile(r"\.?\b[A-Za-z_]\w*(?=\s*\()")
_CAPITALISED = re.compile(r"\b[A-Z]\w+")
#: The names a method's own object goes by, per language (Go's is the receiver's name).
_SELF_NAMES = {
    "python": ("self", "cls"),
    "javascript": ("this",),
    "typescript": ("this",),
    "tsx": ("this",),
    "java": ("this",),
    "rust": ("self", "Self"),
}
_GO_RECEIVER = re.compile(r"^\s*func\s*\(\s*([A-Za-z_]\w*)\s", re.MULTILINE)
#: Languages where a bare ``name(...)`` in a class body calls the class's own method.
_IMPLICIT_THIS = frozenset({"java"})
_BASE_END = re.compile(r"[<\[(]")
_GO_MODULE = re.compile(r"^module\s+\"?([^\s\"]+)", re.MULTILINE)
_MAX_MODULE_FILES = 20  # a Go import links to at most this many files of the package
_CODE_KINDS = frozenset(
    {
        "class",
        "function",
        "method",
        "interface",
        "struct",
        "enum",
        "trait",
        "type",
        "record",
        "union",
        "module",
        "annotation",
        "variable",
        "macro",
    }
)
_CALLABLE_KINDS = frozenset({"function", "method"})
_CODE_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "java"})
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")

#: (source node id, target node id, kind, weight)
EdgeRow = tuple[int, int, str, float]


class NodeKey(NamedTuple):
    """What resolution needs to know about a stored node (a tuple: made by the 100,000)."""

    id: int
    path: str
    qualname: str
    kind: str
    name: str
    parent_id: int | None


@attrs.frozen(slots=True)
class FileFacts:
    """A file's stored facts (see :func:`extract_facts`) with its path and language."""

    path: str
    language: str
    facts: Mapping[str, Any]


def extract_facts(parsed: ParsedFile, drafts: list[NodeDraft]) -> dict[str, Any]:
    """Imports, bindings, and per symbol (``""`` = module-level code) calls, refs and bases.

    Documents and data files have no facts: their capitalised words are prose, not code.
    """
    if parsed.language not in _CODE_LANGUAGES:
        return {}
    bases = {s.qualname: s.bases for s in parsed.symbols if s.bases}
    symbols: dict[str, dict[str, Any]] = {}
    own = _SELF_NAMES.get(parsed.language, ())
    typed = TypedCalls(parsed.language, drafts)
    for draft in drafts:
        if parsed.language == "go":
            receiver = _GO_RECEIVER.search(draft.own_text) if draft.kind == "method" else None
            own = (receiver.group(1),) if receiver else ()
        entry = _names(draft.own_text, own, typed.calls(draft, own))
        if draft.qualname in bases:
            entry["bases"] = bases[draft.qualname]
        if entry:
            symbols[draft.qualname] = entry
    return {
        "imports": [[imp.module, list(imp.names)] for imp in parsed.imports],
        "bindings": {k: list(v) for k, v in parsed.bindings.items()},
        "symbols": symbols,
    }


def go_module(go_mod: str) -> str | None:
    """The module path a ``go.mod`` file declares."""
    found = _GO_MODULE.search(go_mod)
    return found.group(1) if found else None


def _names(text: str, own: tuple[str, ...], typed: Counter[str]) -> dict[str, Any]:
    calls = Counter(_CALL.findall(text))
    if own and calls:
        _mark_own_calls(text, own, calls)
    for key, n in typed.items():
        _, separator, method = _typed_parts(key)
        _move(calls, f".{method}" if separator == "." else method, key, n)
    refs = Counter(_CAPITALISED.findall(text))
    refs.subtract({name: n for name, n in calls.items() if not name.startswith(".")})
    entry: dict[str, Any] = {}
    if calls:
        entry["calls"] = dict(calls)
    kept = {name: n for name, n in refs.items() if n > 0}
    if kept:
        entry["refs"] = kept
    return entry


def _mark_own_calls(text: str, own: tuple[str, ...], calls: Counter[str]) -> None:
    """Count the calls on the method's own object (``self.x(``, ``Self::x(``) as ``@x``."""
    found = Counter(m for pattern in _own_call_patterns(own) for m in pattern.findall(text))
    for (separator, name), n in found.items():
        counted = f".{name}" if separator == "." else name  # ``Self::x(`` reads as ``x(``
        _move(calls, counted, f"@{name}", n)


def _move(calls: Counter[str], counted: str, key: str, n: int) -> None:
    """Count up to ``n`` of the calls counted as ``counted`` as ``key`` instead."""
    moved = min(n, calls[counted])
    if moved <= 0:
        return
    if moved == calls[counted]:
        del calls[counted]
    else:
        calls[counted] -= moved
    calls[key] += moved


def _typed_parts(key: str) -> tuple[str, str, str]:
    """``Type.method`` -> ``("Type", ".", "method")``; ``Type::method`` likewise."""
    if "::" in key:
        type_name, _, method = key.partition("::")
        return type_name, "::", method
    type_name, _, method = key.partition(".")
    return type_name, ".", method


@functools.lru_cache(maxsize=256)
def _own_call_patterns(own: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    # One pattern per word, starting with it: a literal prefix is searched for 8 times as
    # fast as ``\b(?:self|cls)`` is tried at every position (Django's files).
    return tuple(re.compile(rf"{w}(?<![\w$]{w})\s*(\.|::)\s*([A-Za-z_]\w*)(?=\s*\()") for w in own)


def build_edges(
    files: Iterable[FileFacts],
    nodes: Iterable[NodeKey],
    only: Collection[str] | None = None,
    go_modules: Mapping[str, str] | None = None,
) -> list[EdgeRow]:
    """The edges out of ``files``: contains, imports, calls, references, inherits.

    ``nodes`` are all the repository's nodes (names resolve against all of them); ``only``
    limits the containment edges to the nodes of those paths (default: all nodes);
    ``go_modules`` maps the module paths declared by ``go.mod`` files to their directories.
    """
    return list(iter_edges(files, nodes, only, go_modules))


def iter_edges(
    files: Iterable[FileFacts],
    nodes: Iterable[NodeKey],
    only: Collection[str] | None = None,
    go_modules: Mapping[str, str] | None = None,
) -> Iterator[EdgeRow]:
    """:func:`build_edges` one file at a time: ``files`` are read as the edges are consumed,
    and memory holds one file's edges, not the repository's (every edge leaves a node of the
    file whose facts made it)."""
    return _Resolver(files, list(nodes), go_modules or {}).edges(only)


class _Resolver:
    def __init__(
        self, files: Iterable[FileFacts], nodes: list[NodeKey], go_modules: Mapping[str, str]
    ) -> None:
        self.files = files
        self.go_modules = go_modules
        self.nodes = nodes
        self.by_key: dict[tuple[str, str], NodeKey] = {(n.path, n.qualname): n for n in nodes}
        self.file_ids = {n.path: n.id for n in nodes if n.kind == "file"}
        self.file_paths = {i: p for p, i in self.file_ids.items()}
        self.top: dict[str, list[NodeKey]] = {}  # name -> top-level code symbols
        self.members: dict[str, list[NodeKey]] = {}  # name -> methods and nested symbols
        self.types: dict[str, list[NodeKey]] = {}  # name -> classes, structs, interfaces, ...
        self.methods: dict[str, list[NodeKey]] = {}  # qualname -> methods (a Go type's files)
        for node in nodes:
            if node.kind not in _CODE_KINDS:
                continue
            if "." in node.qualname:
                self.members.setdefault(node.name, []).append(node)
                if node.kind in _CALLABLE_KINDS:
                    self.methods.setdefault(node.qualname, []).append(node)
            else:
                self.top.setdefault(node.name, []).append(node)
            if node.kind in TYPE_KINDS:
                self.types.setdefault(node.name, []).append(node)
        self.modules, self.module_names = _python_modules(self.file_ids)
        self.edge_weights: Counter[tuple[int, int, str]] = Counter()

    def edges(self, only: Collection[str] | None) -> Iterator[EdgeRow]:
        for node in self.nodes:
            if node.parent_id is not None and (only is None or node.path in only):
                yield (node.parent_id, node.id, "contains", 1.0)
        for facts in self.files:
            self.edge_weights.clear()
            self.file_edges(facts)
            yield from ((s, t, kind, float(w)) for (s, t, kind), w in self.edge_weights.items())

    def add(self, source: int, target: int, kind: str, weight: int = 1) -> None:
        if source != target:
            self.edge_weights[(source, target, kind)] += weight

    def file_edges(self, facts: FileFacts) -> None:
        path = facts.path
        file_id = self.file_ids.get(path)
        if file_id is None:
            return
        data = facts.facts
        bound: dict[str, NodeKey] = {}
        imported: set[str] = set()
        for module, names in data.get("imports", ()):
            for target_id in self.import_targets(facts, module, names):
                self.add(file_id, target_id, "imports")
                imported.add(self.file_paths[target_id])
        for local, (module, name) in data.get("bindings", {}).items():
            target = self.binding_target(facts, module, name)
            if target is not None:
                bound[local] = target
        symbols = data.get("symbols", {})
        for qualname, entry in symbols.items():
            source = self.by_key.get((path, qualname))
            if source is None:
                continue
            owner = qualname.rsplit(".", 1)[0] if "." in qualname else ""
            implicit = facts.language in _IMPLICIT_THIS
            for name, count in entry.get("calls", {}).items():
                if name[0] == "@":
                    found = self.own(path, owner, name[1:], symbols, bound)
                    found = found or self.member(name[1:])
                elif name[0] == ".":
                    found = self.member(name[1:])
                elif "." in name or "::" in name:
                    type_name, separator, method = _typed_parts(name)
                    found = self.typed(path, type_name, method, bound, imported)
                    if found is None:  # as an untyped call: ``.method(`` or ``method(``
                        found = (
                            self.member(method)
                            if separator == "."
                            else self.name(path, method, bound)
                        )
                else:
                    found = self.own(path, owner, name, symbols, bound) if implicit else None
                    found = found or self.name(path, name, bound)
                if found is not None:
                    self.add(source.id, found.id, "calls", count)
            for name, count in entry.get("refs", {}).items():
                found = self.name(path, name, bound)
                if found is not None:
                    self.add(source.id, found.id, "references", count)
            for name in entry.get("bases", ()):
                found = self.name(path, name, bound)
                if found is not None:
                    self.add(source.id, found.id, "inherits")

    # ---- names ------------------------------------------------------------------------------

    def name(self, path: str, name: str, bound: Mapping[str, NodeKey]) -> NodeKey | None:
        local = self.by_key.get((path, name))
        if local is not None and local.kind in _CODE_KINDS:
            return local
        if name in bound:
            return bound[name]
        candidates = self.top.get(name, ())
        return candidates[0] if len(candidates) == 1 else None

    def own(
        self,
        path: str,
        owner: str,
        name: str,
        symbols: Mapping[str, Any],
        bound: Mapping[str, NodeKey],
    ) -> NodeKey | None:
        """The method ``name`` of ``owner`` or its bases, else of the nearest enclosing type.

        ``self.save()`` inside ``Model.delete``: ``owner`` is ``Model``, then ``Model``'s
        bases; a bare ``save()`` in ``Outer.Inner.go`` finds ``Outer.Inner.save``, then
        ``Outer.save``. ``symbols`` are the file's facts, which name ``owner``'s bases.
        """
        while owner:
            found = self.method(path, owner, name)
            if found is not None:
                return found
            for base in symbols.get(owner, {}).get("bases", ()):
                target = self.name(path, _base_name(base), bound)
                found = target and self.method(target.path, target.qualname, name)
                if found is not None:
                    return found
            owner = owner.rpartition(".")[0]
        return None

    def method(self, path: str, owner: str, name: str) -> NodeKey | None:
        found = self.by_key.get((path, f"{owner}.{name}"))
        return found if found is not None and found.kind in _CALLABLE_KINDS else None

    def member(self, name: str) -> NodeKey | None:
        """The only method (or, for ``module.function()``, top-level symbol) named ``name``."""
        candidates = self.members.get(name)
        if candidates is None:  # ``module.function()``
            candidates = self.top.get(name, [])
        return candidates[0] if len(candidates) == 1 else None

    def typed(
        self,
        path: str,
        type_name: str,
        method: str,
        bound: Mapping[str, NodeKey],
        imported: Collection[str],
    ) -> NodeKey | None:
        """The method ``method`` of the repository's type ``type_name`` as seen from ``path``.

        The type is the only one so named (in a directory named as the package, for Go's
        ``pkg/Type``), else the one bound by an import, defined in ``path``, in a file
        ``path`` imports, or in its directory (the first of these that holds exactly one);
        the method is the type's in its own file, else in its directory
        (a Go package), else the only method of that qualified name when the type is unique.
        """
        package, _, type_name = type_name.rpartition("/")
        candidates = self.types.get(type_name)
        if candidates and package:  # Go's ``pkg.Type``: a type of a directory so named
            candidates = [
                c for c in candidates if posixpath.basename(posixpath.dirname(c.path)) == package
            ]
        if not candidates:
            return None
        owner = (
            candidates[0] if len(candidates) == 1 else _preferred(candidates, path, bound, imported)
        )
        if owner is None:
            return None
        methods = self.methods.get(f"{owner.qualname}.{method}", ())
        own_file = [m for m in methods if m.path == owner.path]
        if own_file:
            return own_file[0]
        directory = posixpath.dirname(owner.path)
        near = [m for m in methods if posixpath.dirname(m.path) == directory]
        if near:
            return near[0]
        return methods[0] if len(methods) == 1 and len(candidates) == 1 else None

    # ---- modules ----------------------------------------------------------------------------

    def import_targets(self, facts: FileFacts, module: str, names: list[str]) -> list[int]:
        language = facts.language
        if language == "python":
            absolute = _absolute(facts.path, module, self.module_names)
            if absolute is None:
                return []
            found = [
                self.modules[f"{absolute}.{n}"] for n in names if f"{absolute}.{n}" in self.modules
            ]
            target = _longest_module(absolute, self.modules)
            if target is not None:
                found.append(target)
            return [self.file_ids[p] for p in found]
        if language in ("javascript", "typescript", "tsx"):
            return self.ids(_js_target(facts.path, module, self.file_ids))
        if language == "go":
            return self.ids(_go_targets(module, self.file_ids, self.go_modules))
        if language == "rust":
            return self.ids(_rust_target(facts.path, module, self.file_ids))
        if language == "java":
            suffix = module.replace(".", "/") + ".java"
            matches = [p for p in self.file_ids if p == suffix or p.endswith("/" + suffix)]
            return self.ids(matches if len(matches) == 1 else [])
        return []

    def ids(self, paths: Iterable[str]) -> list[int]:
        return [self.file_ids[p] for p in paths if p in self.file_ids]

    def binding_target(self, facts: FileFacts, module: str, name: str) -> NodeKey | None:
        if facts.language != "python":
            return None
        absolute = _absolute(facts.path, module, self.module_names)
        if absolute is None:
            return None
        if not name:  # ``import a.b as c``: c is the module
            path = self.modules.get(absolute)
            return self.by_key.get((path, "")) if path else None
        path = self.modules.get(absolute)
        if path is not None:
            symbol = self.by_key.get((path, name))
            if symbol is not None:
                return symbol
        submodule = self.modules.get(f"{absolute}.{name}")
        return self.by_key.get((submodule, "")) if submodule else None


def _preferred(
    candidates: list[NodeKey],
    path: str,
    bound: Mapping[str, NodeKey],
    imported: Collection[str],
) -> NodeKey | None:
    """The one of several same-named types that ``path`` means, or None when ambiguous."""
    name = candidates[0].name
    if name in bound and bound[name] in candidates:
        return bound[name]
    directory = posixpath.dirname(path)
    for tier in (
        [n for n in candidates if n.path == path],
        [n for n in candidates if n.path in imported],
        [n for n in candidates if posixpath.dirname(n.path) == directory],
    ):
        if tier:
            return tier[0] if len(tier) == 1 else None
    return None


def _base_name(base: str) -> str:
    """The class a base expression names: ``models.Model`` -> ``Model``, ``List<T>`` -> ``List``."""
    return _BASE_END.split(base, 1)[0].rpartition(".")[2].strip()


def _python_modules(file_ids: Mapping[str, int]) -> tuple[dict[str, str], dict[str, str]]:
    """Dotted module name -> path for every Python file, and path -> its own module name.

    A file is known by its package-qualified name (up to the first directory without an
    ``__init__.py``) and by its dotted path from the repository root.
    """
    paths = [p for p in file_ids if p.endswith((".py", ".pyi"))]
    packages = {posixpath.dirname(p) for p in paths if posixpath.basename(p) == "__init__.py"}
    modules: dict[str, str] = {}
    names: dict[str, str] = {}
    for path in sorted(paths, key=lambda p: p.endswith(".pyi")):  # .py wins over .pyi
        stem = path.rsplit(".", 1)[0]
        parts = stem.split("/")
        if parts[-1] == "__init__":
            parts.pop()
        directory = posixpath.dirname(path)
        depth = 0  # how many leading directories are not packages
        while directory and directory in packages:
            directory = posixpath.dirname(directory)
        if directory:
            depth = len(directory.split("/"))
        names[path] = ".".join(parts[depth:])
        for name in (names[path], ".".join(parts)):
            if name:
                modules.setdefault(name, path)
    return modules, names


def _absolute(path: str, module: str, names: Mapping[str, str]) -> str | None:
    """The absolute module of an import written in ``path`` (resolving leading dots)."""
    if not module.startswith("."):
        return module
    level = len(module) - len(module.lstrip("."))
    own = names.get(path)
    if own is None:
        return None
    parts = own.split(".")
    if not path.endswith("__init__.py"):
        parts = parts[:-1]  # a module's package
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    rest = module[level:]
    return ".".join([*parts, rest] if rest else parts) or None


def _longest_module(name: str, modules: Mapping[str, str]) -> str | None:
    parts = name.split(".")
    while parts:
        found = modules.get(".".join(parts))
        if found is not None:
            return found
        parts.pop()
    return None


def _js_target(path: str, module: str, file_ids: Mapping[str, int]) -> list[str]:
    if not module.startswith("."):
        return []  # a package from node_modules
    base = posixpath.normpath(posixpath.join(posixpath.dirname(path), module))
    candidates = [base, *(base + e for e in _JS_EXTENSIONS)]
    candidates += [f"{base}/index{e}" for e in _JS_EXTENSIONS]
    if base.endswith(".js"):  # TypeScript imports ``./x.js`` meaning ``./x.ts``
        candidates += [base[:-3] + e for e in _JS_EXTENSIONS]
    return next(([c] for c in candidates if c in file_ids), [])


def _go_targets(
    module: str, file_ids: Mapping[str, int], go_modules: Mapping[str, str]
) -> list[str]:
    """Files of the package directory an import path names.

    With a ``go.mod`` declaring ``module M`` in directory D, ``M/sub`` is ``D/sub``; without
    one, the directory sharing the longest tail (at least two parts) with the import path.
    """
    by_dir: dict[str, list[str]] = {}
    for path in file_ids:
        if path.endswith(".go") and not path.endswith("_test.go"):
            by_dir.setdefault(posixpath.dirname(path), []).append(path)
    for declared, directory in go_modules.items():
        if module == declared or module.startswith(declared + "/"):
            target = posixpath.normpath(posixpath.join(directory, module[len(declared) + 1 :]))
            return sorted(by_dir.get("" if target == "." else target, []))[:_MAX_MODULE_FILES]
    wanted = module.split("/")
    scored = []
    for directory in by_dir:
        parts = directory.split("/")
        common = 0
        while common < min(len(parts), len(wanted)) and parts[-1 - common] == wanted[-1 - common]:
            common += 1
        scored.append((common, directory))
    scored.sort(reverse=True)
    if not scored or scored[0][0] < 2 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return []
    return sorted(by_dir[scored[0][1]])[:_MAX_MODULE_FILES]


def _rust_target(path: str, module: str, file_ids: Mapping[str, int]) -> list[str]:
    directory = posixpath.dirname(path)
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    if module.startswith("mod:"):
        name = module[4:]
        base = directory if stem in ("lib", "main", "mod") else posixpath.join(directory, stem)
        options = [f"{base}/{name}.rs", f"{base}/{name}/mod.rs"]
        return next(([o] for o in options if o in file_ids), [])
    if not module.startswith("crate::"):
        return []
    root = directory
    while root and not any(f"{root}/{n}.rs" in file_ids for n in ("lib", "main")):
        root = posixpath.dirname(root)
    parts = module.split("::")[1:]
    while parts:
        base = posixpath.join(root, *parts) if root else "/".join(parts)
        for option in (f"{base}.rs", f"{base}/mod.rs"):
            if option in file_ids:
                return [option]
        parts.pop()
    return []
