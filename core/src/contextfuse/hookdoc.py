"""``docs/hooks.md``, generated from the hook specifications and the slot table.

Run ``python -m contextfuse.hookdoc > docs/hooks.md`` after changing a hook; a test fails
when the checked-in file differs from what this prints.
"""

from __future__ import annotations

import inspect

from contextfuse import hookspecs
from contextfuse.slots import SLOTS

__all__ = ["render_hook_reference"]

_INTRO = """\
# Hook reference

Every hook a plugin can implement, generated from `contextfuse/hookspecs.py` and the slot
table `contextfuse.slots.SLOTS` (`python -m contextfuse.hookdoc > docs/hooks.md`; a test
fails when this page is out of date). Implement a hook with `@contextfuse.plugin.hookimpl`
on a function of the module your entry point names. Arguments are passed by keyword; an
implementation may accept fewer arguments than listed.

**Component hooks** are `firstresult`: the first non-None result wins, and the core's
defaults answer last. Two plugins providing one slot are a conflict unless configuration
pins one (`[components] <slot> = "<plugin>"`). **Collecting hooks** call every
implementation. pluggy calls every hook, so `tryfirst`, `trylast` and `wrapper=True`
implementations work (a wrapper of a component hook receives the component that was built
and may return another). `CONTEXTFUSE_TRACE_HOOKS=1` prints every hook call on standard error.
"""


def _slot_table() -> str:
    lines = [
        "## Component slots",
        "",
        "| slot | phase | config section | protocol | method | hook | core default |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in SLOTS:
        lines.append(
            f"| `{s.name}` | {s.phase} | `[{s.section}]` | `{s.protocol}` | `{s.method}()` "
            f"| `{s.hook}` | `{s.default_name}` |"
        )
    return "\n".join(lines) + "\n"


def _hook_section(name: str) -> str:
    function = getattr(hookspecs, name)
    signature = str(inspect.signature(function)).replace("'", "")
    firstresult = function.contextfuse_spec.get("firstresult")
    kind = "component hook (firstresult)" if firstresult else "collecting hook"
    doc = inspect.getdoc(function) or ""
    return f"## {name}\n\n`{name}{signature}` — {kind}\n\n{doc}\n"


def render_hook_reference() -> str:
    """The text of ``docs/hooks.md``."""
    names = sorted(n for n in hookspecs.__all__ if n.startswith("contextfuse_"))
    parts = [_INTRO, _slot_table(), *(_hook_section(n) for n in names)]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render_hook_reference(), end="")
