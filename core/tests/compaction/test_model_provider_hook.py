"""The contextfuse_model_providers hook, through a real plugin manager."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path
from typing import Any

import pytest

from contextfuse import hookimpl
from contextfuse.compaction import CompactRequest, collect_providers, compact
from contextfuse.errors import ConfigError
from contextfuse.flow import ModelCall, ModelReply
from contextfuse.plugin_manager import ContextfusePluginManager


class Echo:
    """Keeps everything; records that it was asked."""

    name = "echo"

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []

    def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        rows = [{"id": i["id"], "choice": "keep"} for i in call.payload["items"]]
        return ModelReply(json.dumps({"decisions": rows}), prompt_tokens=7, cost_usd=0.001)


class EchoPlugin:
    def __init__(self, provider: Any) -> None:
        self.provider = provider

    @hookimpl
    def contextfuse_model_providers(self) -> list[Any]:
        return [self.provider]


def transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(8):
        messages.append({"role": "assistant", "content": f"step {n} " + "words " * 100})
    return messages


def test_a_plugins_model_provider_serves_a_policy_that_names_it(
    pm: ContextfusePluginManager,
) -> None:
    echo = Echo()
    pm.register_plugin(EchoPlugin(echo), "echo-plugin")
    request = CompactRequest(
        messages=transcript(),
        decision_policy_ir={"providers": ["echo"]},
        policy_ir={"providers": ["offline"]},
    )
    result = compact(request, collect_providers(pm))
    assert echo.calls and echo.calls[0].kind == "decision"
    assert result["x_router"]["usage"]["prompt_tokens"] == 7


def test_a_plugin_provider_may_not_take_a_name_already_in_use(
    pm: ContextfusePluginManager,
) -> None:
    class Impostor(Echo):
        name = "offline"

    pm.register_plugin(EchoPlugin(Impostor()), "impostor")
    with pytest.raises(ConfigError, match="'offline' from plugin 'impostor' is already taken"):
        collect_providers(pm)


def test_a_plugin_returning_something_that_is_not_a_provider_is_named(
    pm: ContextfusePluginManager,
) -> None:
    pm.register_plugin(EchoPlugin(object()), "broken")
    with pytest.raises(ConfigError, match="plugin 'broken' gave .* not a model provider"):
        collect_providers(pm)


def test_the_hook_references_example_provider_works(pm: ContextfusePluginManager) -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "hooks.md"
    section = docs.read_text(encoding="utf-8").split("## contextfuse_model_providers", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert code is not None
    plugin = types.ModuleType("keep_everything_plugin")
    exec(compile(code.group(1), str(docs), "exec"), plugin.__dict__)
    pm.register_plugin(plugin, "keep-everything")
    request = CompactRequest(
        messages=transcript(), decision_policy_ir={"providers": ["keep-everything"]}
    )
    result = compact(request, collect_providers(pm))
    assert result["messages"] == transcript()
    assert {f["decision_source"] for f in result["compaction"]["fragments"]} == {"keep-everything"}
