"""Public names imported on first use, declared once: as the module's type-checking imports.

A public module (``contextfuse``, ``contextfuse.plugin``) lists what it exports in one
``if TYPE_CHECKING:`` block, the only list there is:

```python
if TYPE_CHECKING:
    from contextfuse.models import ContextFragment as ContextFragment  # one name
    from contextfuse.backends import *  # every name of that module's __all__
else:
    __getattr__, __dir__ = lazy_exports(__name__, extra=("__version__",))
```

Type checkers read the block (``X as X`` and ``*`` mark re-exports); at run time the block
does not run, and ``lazy_exports`` reads it from the module's source on the first attribute
asked for (PEP 562), so importing the module stays cheap. ``__all__`` is derived from it.
Adding a name to a public API is one line in the block.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ast

__all__ = ["declared_exports", "lazy_exports"]


def _is_type_checking(test: ast.expr) -> bool:
    import ast

    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def declared_exports(source: str) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """The ``if TYPE_CHECKING:`` imports of ``source``: ``{name: (module, attribute)}`` for
    each named import and the modules imported with ``*``, in order."""
    import ast  # only when a public name is first asked for

    names: dict[str, tuple[str, str]] = {}
    stars: list[str] = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom) or not statement.module:
                continue
            for alias in statement.names:
                if alias.name == "*":
                    stars.append(statement.module)
                else:
                    names[alias.asname or alias.name] = (statement.module, alias.name)
    return names, stars


def _source(module_name: str) -> str:
    module = sys.modules[module_name]
    origin = getattr(module.__spec__, "origin", None) or ""
    if origin.endswith(".py"):
        with open(origin, encoding="utf-8") as handle:
            return handle.read()
    # A module from an archive: its loader may still hold the source.
    get_source = getattr(getattr(module, "__loader__", None), "get_source", None)
    source = get_source(module_name) if get_source is not None else None
    if source is None:
        raise ImportError(f"{module_name}: no source to read its public names from")
    return str(source)


def lazy_exports(
    module_name: str, extra: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``module_name`` from its declared exports.

    :param extra: names the module defines itself that belong to ``__all__``.
    """
    own = tuple(extra)
    cache: dict[str, Any] = {}

    def declared() -> tuple[dict[str, tuple[str, str]], list[str]]:
        if not cache:
            cache["names"], cache["stars"] = declared_exports(_source(module_name))
        return cache["names"], cache["stars"]

    def public() -> list[str]:
        names, stars = declared()
        everything = set(names) | set(own)
        for star in stars:
            everything.update(importlib.import_module(star).__all__)
        return sorted(everything)

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return public()
        names, stars = declared()
        if name in names:
            module, attribute = names[name]
            value = getattr(importlib.import_module(module), attribute)
        else:
            for star in stars:
                imported = importlib.import_module(star)
                if name in imported.__all__:
                    value = getattr(imported, name)
                    break
            else:
                raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        setattr(sys.modules[module_name], name, value)
        return value

    return __getattr__, public
