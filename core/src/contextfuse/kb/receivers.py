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
qualifiers dropped (``java.util.List<Foo>`` is ``List``; Go keeps the package:
``net/Conn.Close``); ``kb/links.py`` resolves it when the repository has that type.
"""

from __future__ import annotations

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
_NEW = re.compile(rf"{_NAME}[ \t]*(?::[^=\n]*)?=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})")
#: Declarations read from a name on: matched where the name is written, group 1 the type.
_AFTER: dict[str, tuple[re.Pattern[str], ...]] = {
    "java": (_NEW,),
    # ``name: Type`` (parameters, fields, typed locals) and ``name = new Type(``.
    "typescript": (
        re.compile(rf"{_NAME}[ \t]*[?!]?[ \t]*:[ \t]*({_CLASS})(?![\w$]|[ \t]*\[)"),
        _NEW,
    ),
    "javascript": (_NEW,),
    # ``name: Type`` (also ``Optional[Type]``, ``"Type"``) and ``name = Type(``.
    "python": (
        re.compile(rf"{_NAME}[ \t]*:[ \t]*(?:Optional\[)?['\"]?({_CLASS})(?![\w])"),
        re.compile(rf"{_NAME}[ \t]*(?::[^=\n]*)?=[ \t]*({_CLASS})[ \t]*\("),
    ),
    # ``name T`` / ``name *T`` (parameters, receivers, ``var``, struct fields),
    # ``name := T{`` / ``&T{``, ``name := NewT(``.
    "go": (
        re.compile(r"\w+[ \t]+\*?((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)(?=[ \t]*(?:[,)=;\n]|//))"),
        re.compile(r"\w+[ \t]*:?=[ \t]*&?((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)[ \t]*\{"),
        re.compile(r"\w+[ \t]*:?=[ \t]*(?:[A-Za-z_]\w*\.)?[Nn]ew([A-Z]\w*)\("),
    ),
    # ``name: &T`` / ``&mut T`` / ``Arc<T>`` and ``let name = T::new(`` / ``T {``.
    "rust": (
        re.compile(
            r"\w+[ \t]*:[ \t]*&?(?:'\w+[ \t]+)?(?:mut[ \t]+)?"
            r"(?:[A-Za-z_]\w*::)*(?:(?:Box|Rc|Arc)<)?([A-Z]\w*)"
        ),
        re.compile(
            r"\w+[ \t]*=[ \t]*(?:[A-Za-z_]\w*::)*([A-Z]\w*)[ \t]*(?:::[ \t]*\w+[ \t]*\(|\{)"
        ),
    ),
}
_AFTER["tsx"] = _AFTER["typescript"]
#: Java's ``Type name`` (fields, locals, parameters): the type is read back from the name,
#: in a window of the text ending there, and the name must end a declarator.
_JAVA_TYPE = re.compile(rf"(?<![\w$.])({_CLASS})[ \t]*(?:{_GENERIC})?\s+\Z")
_JAVA_END = re.compile(r"\s*[=;,):]")
_WINDOW = 160  # how far back a Java declaration's type may start
#: Characters that, just before a name, make it something other than a declared name.
_NOT_BEFORE = {"typescript": "'\"", "tsx": "'\"", "python": "'\""}
_THIS_NEW = re.compile(
    rf"this(?<![\w$]this)\s*\.\s*({_NAME})[ \t]*=[ \t]*new[ \t]+((?:{_NAME}\.)*{_NAME})"
)
#: Fields a method assigns (``this.x = new T(``, ``self.x = T(``) or a TypeScript
#: constructor declares (``private readonly x: T``): fields of its type.
_FIELDS: dict[str, tuple[re.Pattern[str], ...]] = {
    "java": (_THIS_NEW,),
    "javascript": (_THIS_NEW,),
    "typescript": (
        _THIS_NEW,
        re.compile(
            rf"(?<![\w$])(?:private|protected|public|readonly)[ \t]+(?:readonly[ \t]+)?({_NAME})"
            rf"[ \t]*\??[ \t]*:[ \t]*({_CLASS})"
        ),
    ),
    "python": tuple(
        re.compile(
            rf"{own}(?<![\w.]{own})\s*\.\s*({_NAME})[ \t]*"
            rf"(?:=[ \t]*({_CLASS})[ \t]*\(|:[ \t]*(?:Optional\[)?['\"]?({_CLASS}))"
        )
        for own in ("self", "cls")
    ),
}
_FIELDS["tsx"] = _FIELDS["typescript"]
#: Where a file's own text holds its methods (a Go method or a Rust ``impl`` belongs to its
#: type, not to the file), a file-level declaration is a line that starts so.
_FILE_LINES = {
    "go": re.compile(r"(?:var|const)\s"),
    "rust": re.compile(r"(?:pub(?:\([^)]*\))?\s+)?(?:static|const)\s"),
}
#: Languages where a bare name in a method may be a field of its class.
_BARE_FIELDS = frozenset({"java"})
#: Languages where a capitalised name declared nowhere is a type (Go's are packages or values).
_STATIC = frozenset({"java", "typescript", "tsx", "javascript", "python", "rust"})
#: Kinds of node that declare a type (whose methods a typed call may reach).
TYPE_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type", "record", "union"})
_FIELD_KINDS = frozenset({"variable"})  # a class field that is its own node (a big value)
_GENERIC_START = re.compile(r"[<\[]")
#: ``.method(`` or ``::method(``: a call on something; what is read back from there.
_MEMBER_CALL = re.compile(r"(\.|::)\s*([A-Za-z_$][\w$]*)(?=\s*\()")
#: Read backwards: the name before the call, and the name before it when a ``.`` joins them.
_RECEIVER = re.compile(r"\s*([\w$]+)(?:\.\s*([\w$]+))?")
_RECEIVER_CHARS = 96  # how far back a receiver (``this . name``) is read
#: ``new Foo(`` in Java calls ``Foo``'s constructor, a method named as its class.
_CONSTRUCTION = re.compile(r"new(?<![\w$]new)\s+([A-Z][\w$]*)(?=\s*\()")


class Drafted(Protocol):
    """What is read of a node draft: its kind, qualified name and own text."""

    @property
    def kind(self) -> str: ...

    @property
    def qualname(self) -> str: ...

    @property
    def own_text(self) -> str: ...


class TypedCalls:
    """The typed calls of each symbol of one file (see the module's docstring).

    A declaration is looked for only for the names that calls are made on, where they are
    written (``str.find``), so the cost follows the calls, not the size of the text.
    """

    def __init__(self, language: str, drafts: Sequence[Drafted]) -> None:
        self.language = language
        self.after = _AFTER.get(language, ())
        self.not_before = _NOT_BEFORE.get(language, "")
        self.by_qualname = {d.qualname: d for d in drafts}
        self.drafts = drafts
        self.members: dict[str, list[Drafted]] | None = None  # owner -> its direct members
        self.declared: dict[tuple[str, str], str | None] = {}
        self.fields: dict[str, Mapping[str, str]] = {}

    def calls(self, draft: Drafted, own: tuple[str, ...]) -> Counter[str]:
        """``Type.method`` (or ``Type::method``) -> count, for the calls in ``draft``'s text
        on a name whose type is declared (or that is a type)."""
        found: Counter[str] = Counter()
        if not self.after:
            return found
        text = draft.own_text
        owner = draft.qualname.rpartition(".")[0]
        for call in _MEMBER_CALL.finditer(text):
            start = call.start()
            back = _RECEIVER.match(text[max(0, start - _RECEIVER_CHARS) : start][::-1])
            if back is None:
                continue
            name = back[1][::-1]
            if name[0].isdigit() or name in own:
                continue  # a number, or the own object: ``kb/links.py`` marks those calls
            if back[2] is not None:  # ``x.name.method(``: only a field of the own object
                type_name = self.field(owner, name) if back[2][::-1] in own else None
            else:
                type_name = self.variable(draft.qualname, owner, name)
                if type_name is None and self.language in _STATIC and name[0].isupper():
                    type_name = name
            if type_name:
                found[f"{type_name}{call[1]}{call[2]}"] += 1
        if self.language == "java":  # counted as a call of the bare name: ``::``
            found.update(f"{name}::{name}" for name in _CONSTRUCTION.findall(text))
        return found

    def variable(self, qualname: str, owner: str, name: str) -> str | None:
        """The declared type of a bare ``name`` used in ``qualname``."""
        scopes = [qualname]
        if self.language in _BARE_FIELDS:
            scopes.extend(_ancestors(owner))
        scopes.append("")
        for scope in scopes:
            found = self.declared_in(scope, name)
            if found is not None:
                return found
        return None if self.language not in _BARE_FIELDS else self.field(owner, name)

    def field(self, owner: str, name: str) -> str | None:
        """The declared type of the field ``name`` of ``owner`` (or an enclosing type)."""
        for scope in _ancestors(owner):
            draft = self.by_qualname.get(scope)
            if draft is None or draft.kind not in TYPE_KINDS:
                continue
            found = self.declared_in(scope, name) or self.fields_of(scope).get(name)
            if found is not None:
                return found
        return None

    def declared_in(self, qualname: str, name: str) -> str | None:
        """The type ``name`` is declared with in ``qualname``'s own text, if it is."""
        key = (qualname, name)
        if key in self.declared:
            return self.declared[key]
        draft = self.by_qualname.get(qualname)
        found = None
        if draft is not None:
            lines = _FILE_LINES.get(self.language) if not qualname else None
            found = self.declaration(draft.own_text, name, lines)
        self.declared[key] = found
        return found

    def declaration(self, text: str, name: str, lines: re.Pattern[str] | None) -> str | None:
        """The first declaration of ``name`` in ``text`` (its type's own name), on a line
        that starts as ``lines`` says when it is given."""
        places = _occurrences(text, name, self.not_before)
        if lines is not None:
            places = [at for at in places if lines.match(text, text.rfind("\n", 0, at) + 1)]
        if self.language == "java":
            for at in places:
                if _JAVA_END.match(text, at + len(name)):
                    typed = _JAVA_TYPE.search(text, max(0, at - _WINDOW), at)
                    if typed is not None:
                        return _type_name(typed[1])
        for pattern in self.after:
            for at in places:
                matched = pattern.match(text, at)
                if matched is not None:
                    return _type_name(matched[1], self.language)
        return None

    def fields_of(self, owner: str) -> Mapping[str, str]:
        """Fields of ``owner`` declared by its field nodes or assigned by its methods."""
        cached = self.fields.get(owner)
        if cached is not None:
            return cached
        found: dict[str, str] = {}
        assigned = _FIELDS.get(self.language, ())
        if self.members is None:
            self.members = {}
            for member in self.drafts:
                self.members.setdefault(member.qualname.rpartition(".")[0], []).append(member)
        for member in self.members.get(owner, ()):
            if member.kind in _FIELD_KINDS:
                typed = self.declared_in(member.qualname, member.qualname.rpartition(".")[2])
                if typed is not None:
                    found.setdefault(member.qualname.rpartition(".")[2], typed)
            else:
                for pattern in assigned:
                    for name, *types in pattern.findall(member.own_text):
                        found.setdefault(name, _type_name(next(t for t in types if t)))
        self.fields[owner] = found
        return found


def _occurrences(text: str, name: str, not_before: str) -> list[int]:
    """Where ``name`` is written in ``text`` as a whole word (not after a ``.``)."""
    found = []
    at = text.find(name)
    end = len(name)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + end : at + end + 1]
        if not (before.isalnum() or before in "_$." or before in not_before) and not (
            after.isalnum() or after in ("_", "$")
        ):
            found.append(at)
        at = text.find(name, at + end)
    return found


def _ancestors(qualname: str) -> list[str]:
    """``A.B`` -> ``["A.B", "A"]``."""
    found = []
    while qualname:
        found.append(qualname)
        qualname = qualname.rpartition(".")[0]
    return found


def _type_name(written: str, language: str = "") -> str:
    """``java.util.List<Foo>`` -> ``List``; Go's ``pkg.Context`` -> ``pkg/Context``: Go
    reuses type names across packages (``net.Conn``), so the package stays to tell them apart."""
    name = _GENERIC_START.split(written, 1)[0].rpartition("::")[2]
    qualifier, _, name = name.rpartition(".")
    return f"{qualifier.rpartition('.')[2]}/{name}" if qualifier and language == "go" else name
