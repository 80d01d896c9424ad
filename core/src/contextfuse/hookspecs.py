"""Every hook a contextfuse plugin can implement (pluggy project name ``contextfuse``).

Two kinds of hook (the component slots are listed once, in ``contextfuse.slots``):

* **Component hooks** (``firstresult``): one per pipeline component. Each returns an object
  implementing the component's protocol (``contextfuse.components.protocols``), or ``None``
  to let the next implementation answer. The core's defaults are registered with
  ``trylast=True``, so any installed plugin wins over them; a component passed to
  ``ACMSPipeline(...)`` wins over both. Two plugins implementing the same component hook
  are a conflict unless configuration pins one (``[components] <name> = "<plugin>"``).
* **Collecting hooks** (``COLLECTING_HOOKS``): called once, every implementation answers
  (strategies, backends, index contributors, tokenizers, model providers, CLI commands). An
  implementation calls ``register(item)`` for each item it contributes, or returns a sequence
  of items (the older form, without the ``register`` argument). Each item is attributed to
  its plugin; a ``wrapper=True`` implementation runs once and receives every plugin's items
  (one list per implementation), and may change that list.
* **Observer hooks** (``OBSERVER_HOOKS``): ``contextfuse_assembly_finished`` is called once
  per assembly; an observer that raises is logged by plugin name and the others still run.

All hooks are called through pluggy with keyword arguments; an implementation may accept
fewer arguments than the specification lists (pluggy's opt-in arguments), and pluggy's
``tryfirst``, ``trylast`` and ``wrapper=True`` apply. ``CONTEXTFUSE_TRACE_HOOKS=1`` prints every
hook call on standard error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

from contextfuse.slots import SLOTS, Slot

if TYPE_CHECKING:
    from contextfuse.models import ContextPayload, ContextRequest
    from contextfuse.strategy import ContextStrategy
    from contextfuse.tokenizer import Tokenizer

PROJECT_NAME = "contextfuse"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

#: Hooks called once with a ``register`` callback, every item attributed to its plugin.
COLLECTING_HOOKS: tuple[str, ...] = (
    "contextfuse_backend_providers",
    "contextfuse_cli_commands",
    "contextfuse_index_contributors",
    "contextfuse_model_providers",
    "contextfuse_strategies",
    "contextfuse_tokenizers",
)

#: Hooks that notify every implementation, each isolated from the others' failures.
OBSERVER_HOOKS: tuple[str, ...] = ("contextfuse_assembly_finished",)

__all__ = [
    "COLLECTING_HOOKS",
    "COMPONENT_HOOKS",
    "OBSERVER_HOOKS",
    "PROJECT_NAME",
    "hookimpl",
    "hookspec",
    *COLLECTING_HOOKS,
    *OBSERVER_HOOKS,
    *(s.hook for s in SLOTS),  # the component hooks, generated below
]

#: What a collecting hook's ``register`` argument is: call it once per item contributed.
Register = Callable[[Any], None]


# ---- component hooks: one per slot of the slot table -------------------------------------


def _component_doc(entry: Slot) -> str:
    return f"""Provide the {entry.protocol}: {entry.summary}.

    Called once when an ``ACMSPipeline`` is built without a ``{entry.name}`` argument.
    Returns an object implementing ``{entry.protocol}``, or ``None`` to defer.
    Stops at the first non-None result; the core default ({entry.default_name}) is last.

    :param config: the ``[{entry.section}]`` settings of the active configuration.
    """


def _component_hookspec(entry: Slot) -> Callable[[dict[str, Any]], Any]:
    def specification(config: dict[str, Any]) -> Any:
        """Generated from the slot table."""

    specification.__name__ = specification.__qualname__ = entry.hook
    specification.__doc__ = _component_doc(entry)
    specification.__annotations__ = {
        "config": "dict[str, Any]",
        "return": f"{entry.protocol} | None",
    }
    return hookspec(firstresult=True)(specification)


for _entry in SLOTS:
    globals()[_entry.hook] = _component_hookspec(_entry)


# ---- collecting hooks ---------------------------------------------------------------------


@hookspec
def contextfuse_strategies(register: Register) -> Sequence[ContextStrategy] | None:
    """Contribute retrieval strategies.

    Called when a plugin manager collects strategies (building a registry or a pipeline).
    Call ``register(strategy)`` for each strategy object (spec protocol or v1 signatures), or
    return a sequence of them. All are collected; a name claimed twice is an error naming
    both plugins.
    """


@hookspec
def contextfuse_backend_providers(register: Register) -> Sequence[Any] | None:
    """Contribute knowledge-base backend providers (e.g. a PostgreSQL store).

    Called when ``open_backends`` or a ``ContextAssembler`` opens a store other than the
    embedded one. Call ``register(provider)`` for objects with a ``name``, the backend kinds
    they ``provides`` and an ``open(root, config) -> BackendSet`` method (optionally
    ``index(root, config, **options)`` and ``exists(root, config)``); see
    ``contextfuse.plugin.BackendProvider``; or return a sequence of them. All are collected;
    ``[index] store`` chooses one by name or URL scheme (default: the embedded SQLite store,
    ``sqlite``, which the core provides through this hook).
    """


@hookspec
def contextfuse_index_contributors(register: Register) -> Sequence[Any] | None:
    """Contribute index-time work (embeddings, extra graph edges).

    Called each time an index is built or refreshed, after the nodes are written. Call
    ``register(contributor)`` for objects with a ``name`` and ``contribute(session)`` (see
    ``contextfuse.kb.IndexSession``), or return a sequence of them. All are collected and
    each runs in turn; one that fails is reported by name and the index is still usable.
    """


@hookspec
def contextfuse_tokenizers(register: Register) -> Sequence[Tokenizer] | None:
    """Contribute tokenizers.

    Called when configuration names a tokenizer (``[tokenizer] name``) as a
    ``ContextAssembler`` is built. Call ``register(tokenizer)`` for tokenizer objects
    (``contextfuse.plugin.Tokenizer``), or return a sequence of them. All are collected and
    the one whose ``name`` matches is used; the core contributes ``tiktoken:cl100k_base`` (the
    default) and ``tiktoken:o200k_base``.
    """


@hookspec
def contextfuse_model_providers(register: Register) -> Sequence[Any] | None:
    """Contribute model providers for transcript compaction (decisions and summaries).

    Called when compaction collects its providers (``contextfuse.compaction.
    collect_providers``: once per ``contextfuse compact``, once when ``serve`` or ``mcp``
    starts). Call ``register(provider)`` (or return a sequence) for objects implementing
    ``contextfuse.flow.ModelProvider``: a ``name``
    (what a policy's ``providers`` list names) and ``complete(call: ModelCall) ->
    ModelReply``, which answers within ``call.timeout_s`` and raises ``ProviderError`` on
    failure. All are collected; a name already taken (``offline`` is built in) is an
    error naming the plugin.

    A provider receives two kinds of call. ``call.kind == "decision"``: ``call.payload`` is
    ``{"question", "choices", "items": [{"id", "choices", "text", "signals"}]}`` and the reply
    text must be ``{"decisions": [{"id", "choice"}]}``. ``call.kind == "generation"``:
    ``call.payload`` is ``{"instruction", "records": [{"id", "text"}]}`` and the reply is
    ``{"summaries": [{"id", "summary"}]}``. ``call.messages`` carries the same request as OpenAI
    chat messages for providers that forward it to a model. ``ModelReply`` also carries
    ``finish_reason`` (``"length"`` means truncated), token usage and ``cost_usd`` (None when
    unknown).

    ```python
    import json
    from contextfuse import hookimpl
    from contextfuse.flow import ModelCall, ModelReply


    class KeepEverything:
        name = "keep-everything"

        def complete(self, call: ModelCall) -> ModelReply:
            rows = [{"id": i["id"], "choice": "keep"} for i in call.payload.get("items", [])]
            return ModelReply(json.dumps({"decisions": rows}), cost_usd=0.0)


    @hookimpl
    def contextfuse_model_providers(register):
        register(KeepEverything())
    ```
    """


@hookspec
def contextfuse_cli_commands(register: Register) -> Sequence[Any] | None:
    """Contribute commands to the ``contextfuse`` command line.

    Called when the CLI is asked for a command that is not built in. Call
    ``register(command)`` for ``click.Command`` objects, or return a sequence of them. All are
    collected and added under their own names; a name that clashes with a built-in command is
    reported with its plugin and skipped.
    """


@hookspec
def contextfuse_assembly_finished(request: ContextRequest, payload: ContextPayload) -> None:
    """Observe a finished assembly (logging, metrics, caching).

    Called once after every ``ACMSPipeline`` assembly, with the request and the payload
    returned to the caller. Return values are ignored; every implementation is called. An
    exception raised here is logged with the plugin's name, does not keep the other observers
    from being called and does not affect the payload.
    """


#: Component slot name -> hook name (from ``contextfuse.slots.SLOTS``).
COMPONENT_HOOKS: dict[str, str] = {s.name: s.hook for s in SLOTS}
