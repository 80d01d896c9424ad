"""Backend providers: how a repository's store is opened."""

from __future__ import annotations

import pytest

from contextfuse import BackendSet, ConfigError, ContextAssembler
from contextfuse.config import ContextfuseConfig, IndexSettings
from contextfuse.kb import open_backends
from contextfuse.plugin import hookimpl
from contextfuse.stores import backend_providers


class MemoryText:
    def __init__(self):
        self.closed = False

    def search(self, query, limit=20, kinds=None):
        return []

    def close(self):
        self.closed = True


class MemoryStore:
    name = "memory"
    provides = frozenset({"text"})

    def __init__(self):
        self.opened: list[tuple[str, dict]] = []
        self.text = MemoryText()

    def open(self, root, config):
        self.opened.append((str(root), dict(config)))
        return BackendSet(text=self.text)


class MemoryPlugin:
    def __init__(self, store):
        self.store = store

    @hookimpl
    def contextfuse_backend_providers(self):
        return [self.store]


def test_the_embedded_sqlite_store_is_the_core_provider(pm):
    assert type(backend_providers(pm)["sqlite"]).__name__ == "SQLiteStoreProvider"


def test_open_backends_opens_the_store_a_provider_name_chooses(pm, tmp_path):
    store = MemoryStore()
    pm.register_plugin(MemoryPlugin(store), "memory")
    backends = open_backends(tmp_path, store="memory", pm=pm)
    assert backends.text is store.text and store.opened[0][0] == str(tmp_path)


def test_a_url_chooses_the_provider_by_its_scheme_and_is_passed_on(pm, tmp_path):
    store = MemoryStore()
    pm.register_plugin(MemoryPlugin(store), "memory")
    open_backends(tmp_path, store="memory://somewhere/db", pm=pm)
    assert store.opened[0][1]["url"] == "memory://somewhere/db"


def test_an_unknown_store_is_a_config_error_naming_the_installed_ones(pm, tmp_path):
    with pytest.raises(ConfigError, match="no backend provider 'postgresql'.*sqlite"):
        open_backends(tmp_path, store="postgresql://db", pm=pm)


def test_the_assembler_uses_the_configured_store_and_closes_it(pm, tmp_path):
    store = MemoryStore()
    pm.register_plugin(MemoryPlugin(store), "memory")

    class Text:
        @hookimpl
        def contextfuse_strategies(self):
            from contextfuse.plugin import StrategyCapabilities

            class Grep:
                name = "grep"
                capabilities = StrategyCapabilities(uses_text=True, resource_types=("*",))

                def can_handle(self, request, backends):
                    return 1.0

                def assemble(self, request, backends, budget, plan_context):
                    return []

                def explain(self):
                    return "grep"

            return [Grep()]

    pm.register_plugin(Text(), "text-strategy")
    config = ContextfuseConfig(index=IndexSettings(store="memory"), enabled=("grep",))
    with ContextAssembler(tmp_path, config=config, plugin_manager=pm) as assembler:
        payload = assembler.assemble("anything", 1000)
    assert payload.fragments == () and store.text.closed
