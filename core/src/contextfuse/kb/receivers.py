"""The declared type of what a method is called on: ``pluginManager.exec()`` is
``PluginManager.exec`` when ``PluginManager pluginManager`` is declared in scope.

Lexical and cheap: a declaration counts only where it is written, in the calling symbol's own
text (parameters, locals), in its file's module-level text, and, for a call on a field
(``this.router.match()``, ``self.parser.parse()``, a Go receiver's field; a bare field name
in Java), in the text of the type that owns the method (fields, and fields assigned a new
object in its methods). There is no inference beyond the declaration: ``x = make()`` says
nothing. A name that is declared nowhere but starts with a capital letter (``Reflect.find()``,
``Foo::new()``) is taken as the type itself: a static call; Java's ``new Foo(`` calls
``Foo``'s constructor. Each call found is reported as ``Type.method`` (``Type::method`` for
a Rust path call or a Java constructor: counted as a bare name), with generics and
qualifiers dropped (``java.util.List<Foo>`` is ``List``); ``kb/links.py`` resolves it when
the repository has that type.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["TYPE_KINDS", "Drafted", "TypedCalls"]

_NAME = r"[A-Za-z_$][\w$]*"
#: A (possibly qualified) type name whose last part is capitalised: ``a.b.Foo``.
_CLASS = rf"(?:{_NAME}\.)*[A-Z][\w$]*"
#: Up to three levels of generic arguments: ``<String, List<Foo>>``.
_GENERIC = r"<(?:[^<>;{}()]|<(?:[^<>;{}()]|<[^<>;{}()]*>)*>)*>"
_NEW = re.compile(
    rf"(?<![\w$.])({_NAME})[ \t]*(?::[^=\n]*)?=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})"
)
_DECLARATIONS: dict[str, tuple[re.Pattern[str], ...]] = {
    # ``Type name`` followed by what ends a declarator: fields, locals, parameters.
    "java": (
        re.compile(
            rf"(?<![\w$.])(?P<type>{_CLASS})[ \t]*(?:{_GENERIC})?\s+(?P<name>{_NAME})\s*(?=[=;,):])"
        ),
        _NEW,
    ),
    # ``name: Type`` (parameters, fields, typed locals) and ``name = new Type(``.
    "typescript": (
        re.compile(rf"(?<![\w$.'\"])({_NAME})[ \t]*[?!]?[ \t]*:[ \t]*({_CLASS})(?![\w$]|[ \t]*\[)"),
        _NEW,
    ),
    "javascript": (_NEW,),
    # ``name: Type`` (also ``Optional[Type]``, ``"Type"``) and ``name = Type(``.
    "python": (
        re.compile(rf"(?<![\w.'\"])({_NAME})[ \t]*:[ \t]*(?:Optional\[)?['\"]?({_CLASS})(?![\w])"),
        re.compile(rf"(?<![\w.])({_NAME})[ \t]*(?::[^=\n]*)?=[ \t]*({_CLASS})[ \t]*\("),
    ),
    # ``name T`` / ``name *T`` (parameters, receivers, ``var``, struct fields),
    # ``name := T{`` / ``&T{``, ``name := NewT(``.
    "go": (
        re.compile(
            r"(?<![\w.])([A-Za-z_]\w*)[ \t]+\*?((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)"
            r"(?=[ \t]*(?:[,)=;\n]|//))"
        ),
        re.compile(
            r"(?<![\w.])([A-Za-z_]\w*)[ \t]*:?=[ \t]*&?((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)[ \t]*\{"
        ),
        re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*:?=[ \t]*(?:[A-Za-z_]\w*\.)?[Nn]ew([A-Z]\w*)\("),
    ),
    # ``name: &T`` / ``&mut T`` / ``Arc<T>`` and ``let name = T::new(`` / ``T {``.
    "rust": (
        re.compile(
            r"(?<![\w.])([a-z_]\w*)[ \t]*:[ \t]*&?(?:'\w+[ \t]+)?(?:mut[ \t]+)?"
            r"(?:[A-Za-z_]\w*::)*(?:(?:Box|Rc|Arc)<)?([A-Z]\w*)"
        ),
        re.compile(
            r"\blet[ \t]+(?:mut[ \t]+)?([a-z_]\w*)[ \t]*=[ \t]*(?:[A-Za-z_]\w*::)*([A-Z]\w*)"
            r"[ \t]*(?:::[ \t]*\w+[ \t]*\(|\{)"
        ),
    ),
}
_DECLARATIONS["tsx"] = _DECLARATIONS["typescript"]
#: Fields a method assigns (``this.x = new T(``, ``self.x = T(``) or a TypeScript
#: constructor declares (``private readonly x: T``): fields of its type.
_FIELDS: dict[str, tuple[re.Pattern[str], ...]] = {
    "java": (re.compile(rf"\bthis\s*\.\s*({_NAME})[ \t]*=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})"),),
    "javascript": (
        re.compile(rf"\bthis\s*\.\s*({_NAME})[ \t]*=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})"),
    ),
    "typescript": (
        re.compile(rf"\bthis\s*\.\s*({_NAME})[ \t]*=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})"),
        re.compile(
            rf"\b(?:private|protected|public|readonly)[ \t]+(?:readonly[ \t]+)?({_NAME})"
            rf"[ \t]*\??[ \t]*:[ \t]*({_CLASS})"
        ),
    ),
    "python": (
        re.compile(rf"\b(?:self|cls)\s*\.\s*({_NAME})[ \t]*(?::[^=\n]*)?=[ \t]*({_CLASS})[ \t]*\("),
        re.compile(rf"\b(?:self|cls)\s*\.\s*({_NAME})[ \t]*:[ \t]*(?:Optional\[)?['\"]?({_CLASS})"),
    ),
}
_FIELDS["tsx"] = _FIELDS["typescript"]
#: Languages where a bare name in a method may be a field of its class.
_BARE_FIELDS = frozenset({"java"})
#: Languages where a capitalised name declared nowhere is a type (Go's are packages or values).
_STATIC = frozenset({"java", "typescript", "tsx", "javascript", "python", "rust"})
#: Kinds of node that declare a type (whose methods a typed call may reach).
TYPE_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type", "record", "union"})
_FIELD_KINDS = frozenset({"variable"})  # a class field that is its own node (a big value)
_GENERIC_START = re.compile(r"[<\[]")
#: ``new Foo(`` in Java calls ``Foo``'s constructor, a method named as its class.
_CONSTRUCTION = re.compile(r"\bnew\s+([A-Z][\w$]*)(?=\s*\()")


class Drafted(Protocol):
    """What is read of a node draft: its kind, qualified name and own text."""

    @property
    def kind(self) -> str: ...

    @property
    def qualname(self) -> str: ...

    @property
    def own_text(self) -> str: ...


@functools.lru_cache(maxsize=64)
def _receiver_calls(own: tuple[str, ...]) -> re.Pattern[str]:
    """``name.method(`` and ``name::method(``, with ``own.`` before a field's name."""
    prefix = f"(?:({'|'.join(map(re.escape, own))})\\s*\\.\\s*)?" if own else "()"
    return re.compile(
        rf"(?<![\w$.]){prefix}({_NAME})\s*(\.|::)\s*({_NAME})(?=\s*\()",
    )


class TypedCalls:
    """The typed calls of each symbol of one file (see the module's docstring)."""

    def __init__(self, language: str, drafts: Sequence[Drafted]) -> None:
        self.language = language
        self.patterns = _DECLARATIONS.get(language, ())
        self.by_qualname = {d.qualname: d for d in drafts}
        self.drafts = drafts
        self.members: dict[str, list[Drafted]] | None = None  # owner -> its direct members
        self.declared: dict[str, Mapping[str, str]] = {}
        self.fields: dict[str, Mapping[str, str]] = {}

    def calls(self, draft: Drafted, own: tuple[str, ...]) -> Counter[str]:
        """``Type.method`` (or ``Type::method``) -> count, for the calls in ``draft``'s text
        on a name whose type is declared (or that is a type)."""
        found: Counter[str] = Counter()
        if not self.patterns:
            return found
        owner = draft.qualname.rpartition(".")[0]
        for field_of, name, separator, method in _receiver_calls(own).findall(draft.own_text):
            if name in own:
                continue  # a call on the own object: ``kb/links.py`` marks it as such
            if field_of:
                type_name = self.field(owner, name)
            else:
                type_name = self.variable(draft.qualname, owner, name)
                if type_name is None and self.language in _STATIC and name[:1].isupper():
                    type_name = name
            if type_name:
                found[f"{type_name}{separator}{method}"] += 1
        if self.language == "java":  # counted as a call of the bare name: ``::``
            found.update(f"{name}::{name}" for name in _CONSTRUCTION.findall(draft.own_text))
        return found

    def variable(self, qualname: str, owner: str, name: str) -> str | None:
        """The declared type of a bare ``name`` used in ``qualname``."""
        scopes = [qualname]
        if self.language in _BARE_FIELDS:
            scopes.extend(_ancestors(owner))
        scopes.append("")
        for scope in scopes:
            found = self.declared_in(scope).get(name)
            if found is not None:
                return found
        return None if self.language not in _BARE_FIELDS else self.field(owner, name)

    def field(self, owner: str, name: str) -> str | None:
        """The declared type of the field ``name`` of ``owner`` (or an enclosing type)."""
        for scope in _ancestors(owner):
            found = self.fields_of(scope).get(name)
            if found is not None:
                return found
        return None

    def declared_in(self, qualname: str) -> Mapping[str, str]:
        cached = self.declared.get(qualname)
        if cached is None:
            draft = self.by_qualname.get(qualname)
            cached = _declarations(self.patterns, draft.own_text) if draft is not None else {}
            self.declared[qualname] = cached
        return cached

    def fields_of(self, owner: str) -> Mapping[str, str]:
        """Fields declared in ``owner``'s text, in its field nodes, or assigned by its methods."""
        cached = self.fields.get(owner)
        if cached is not None:
            return cached
        found: dict[str, str] = {}
        draft = self.by_qualname.get(owner)
        if draft is not None and draft.kind in TYPE_KINDS:
            found.update(self.declared_in(owner))
            assigned = _FIELDS.get(self.language, ())
            if self.members is None:
                self.members = {}
                for member in self.drafts:
                    self.members.setdefault(member.qualname.rpartition(".")[0], []).append(member)
            for member in self.members.get(owner, ()):
                if member.kind in _FIELD_KINDS:
                    for name, type_name in self.declared_in(member.qualname).items():
                        found.setdefault(name, type_name)
                elif assigned:
                    for name, type_name in _declarations(assigned, member.own_text).items():
                        found.setdefault(name, type_name)
        self.fields[owner] = found
        return found


def _ancestors(qualname: str) -> list[str]:
    """``A.B`` -> ``["A.B", "A"]``."""
    found = []
    while qualname:
        found.append(qualname)
        qualname = qualname.rpartition(".")[0]
    return found


def _declarations(patterns: Sequence[re.Pattern[str]], text: str) -> dict[str, str]:
    """Declared name -> the type's own name (the first declaration of a name wins)."""
    found: dict[str, str] = {}
    for pattern in patterns:
        if pattern.groupindex:  # the type written before the name
            for match in pattern.finditer(text):
                found.setdefault(match["name"], _type_name(match["type"]))
        else:
            for name, type_name in pattern.findall(text):
                found.setdefault(name, _type_name(type_name))
    return found


def _type_name(written: str) -> str:
    """``java.util.List<Foo>`` -> ``List``, ``pkg.Context`` -> ``Context``."""
    return _GENERIC_START.split(written, 1)[0].rpartition(".")[2].rpartition("::")[2]
