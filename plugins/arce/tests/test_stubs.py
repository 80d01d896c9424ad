"""Stubs and their delegates: a contract among the best matches hands its rank to the code
that does the work (its callers and its overrides), on repositories indexed for real."""

from __future__ import annotations

import pytest

from contextfuse import BackendSet, ContextRequest
from contextfuse_arce import ArceStrategy, ArceWeights
from contextfuse_arce.stubs import MAX_OVERRIDING_TYPES, delegation, is_stub_source

HOOK = """package web;

public class Plugin {
    /**
     * Whether the web view may load a resource from this address; null when the plugin
     * has no opinion.
     */
    public Boolean shouldAllowRequest(String url) {
        return null;
    }
}
"""

MANAGER = """package web;

public class Manager {
    private java.util.List<Plugin> plugins;

    public boolean shouldAllowRequest(String url) {
        for (Plugin plugin : plugins) {
            Boolean result = plugin.shouldAllowRequest(url);
            if (result != null) {
                return result;
            }
        }
        return url.startsWith("file://") || url.startsWith("data:");
    }
}
"""

ALLOW_LIST = """package web;

public class AllowListPlugin extends Plugin {
    @Override
    public Boolean shouldAllowRequest(String url) {
        if (url.startsWith("https://")) {
            return true;
        }
        return false;
    }
}
"""

TEST = """package web;

public class ManagerTest {
    public void testRequest(Plugin plugin) {
        plugin.shouldAllowRequest("https://example.com");
    }
}
"""

FILES = {
    "src/web/Plugin.java": HOOK,
    "src/web/Manager.java": MANAGER,
    "src/web/AllowListPlugin.java": ALLOW_LIST,
}


def _uri(backends: BackendSet, path: str, symbol: str) -> str:
    return f"project://{backends.nodes.project}/{path}#{symbol}"


@pytest.mark.parametrize(
    "source",
    [
        "public Object onMessage(String id, Object data);",
        "abstract public void startActivity(Intent intent);",
        "/** Called on pause. */\npublic void onPause() {\n}",
        "@Override\npublic Bundle onSaveInstanceState() {\n    return null;\n}",
        "onError(err) { }",
        'def render(self):\n    """Draw it."""\n    raise NotImplementedError("subclasses")',
        "def close(self) -> None: ...",
        "def reset(self):\n    # nothing to do\n    pass",
        "fn port(&self) -> Option<u16>;",
        "fn finish(&mut self) -> Result<(), Error> {\n    Ok(())\n}",
        "fn parse(&self) {\n    unimplemented!()\n}",
        'public int size() {\n    throw new UnsupportedOperationException("read only");\n}',
        "isEmpty(): boolean;",
    ],
)
def test_a_declaration_without_work_is_a_stub(source):
    assert is_stub_source(source)


@pytest.mark.parametrize(
    "source",
    [
        "func (c *Context) IsAborted() bool {\n\treturn c.index >= abortIndex\n}",
        "public String getHost()\n{\n    return request.getHost();\n}",
        "def url(self):\n    return self._url",
        "def merge(self, extra={}):\n    self.items.update(extra)",
        "def total(self) -> int:\n    return sum({1: 2}.values())",
        "fn join(&self, input: &str) -> Result<Url, ParseError> {\n    "
        "Url::options().base_url(Some(self)).parse(input)\n}",
        "public void flush() {\n    drain();\n}",
        MANAGER.split("    public boolean", 1)[1],
        "private static final int LIMIT = 10;",
        "@Override",
        "",
    ],
)
def test_code_that_does_something_is_not_a_stub(source):
    assert not is_stub_source(source)


def test_the_callers_and_overrides_of_a_stub_are_its_delegates(indexed):
    with indexed(FILES) as backends:
        hook = _uri(backends, "src/web/Plugin.java", "Plugin.shouldAllowRequest")
        found = delegation([hook], backends, limit=10)
    assert found.stubs == {hook}
    assert set(found.delegates) == {
        _uri(backends, "src/web/Manager.java", "Manager.shouldAllowRequest"),
        _uri(backends, "src/web/AllowListPlugin.java", "AllowListPlugin.shouldAllowRequest"),
    }


def test_code_that_does_the_work_has_no_delegates(indexed):
    with indexed(FILES) as backends:
        manager = _uri(backends, "src/web/Manager.java", "Manager.shouldAllowRequest")
        assert delegation([manager], backends, limit=10).delegates == ()


def test_a_test_calling_a_stub_is_not_its_delegate(indexed):
    with indexed({**FILES, "src/web/ManagerTest.java": TEST}) as backends:
        hook = _uri(backends, "src/web/Plugin.java", "Plugin.shouldAllowRequest")
        delegates = delegation([hook], backends, limit=10).delegates
    assert _uri(backends, "src/web/ManagerTest.java", "ManagerTest.testRequest") not in delegates


def test_only_the_first_nodes_considered_are_looked_at_for_stubs(indexed):
    with indexed(FILES) as backends:
        manager = _uri(backends, "src/web/Manager.java", "Manager.shouldAllowRequest")
        hook = _uri(backends, "src/web/Plugin.java", "Plugin.shouldAllowRequest")
        assert delegation([manager, hook], backends, limit=10, considered=1).stubs == set()


def test_a_plain_question_ranks_the_dispatcher_above_the_hook_it_calls(indexed):
    query = "may the web view load a resource when no plugin has an opinion"
    with indexed(FILES) as backends:
        scores, lists = ArceStrategy().signals(ContextRequest(query=query), backends)
        without, _ = ArceStrategy(ArceWeights(delegates=0.0)).signals(
            ContextRequest(query=query), backends
        )
    hook = _uri(backends, "src/web/Plugin.java", "Plugin.shouldAllowRequest")
    manager = _uri(backends, "src/web/Manager.java", "Manager.shouldAllowRequest")
    assert manager in lists["delegates"]
    assert without[hook] > without[manager]
    assert scores[manager] > scores[hook]


def test_a_request_naming_code_keeps_the_stub_it_names(indexed):
    with indexed(FILES) as backends:
        scores, lists = ArceStrategy().signals(
            ContextRequest(query="what does Plugin.shouldAllowRequest return"), backends
        )
        without, _ = ArceStrategy(ArceWeights(delegates=0.0)).signals(
            ContextRequest(query="what does Plugin.shouldAllowRequest return"), backends
        )
    assert "delegates" not in lists
    assert scores == without


def test_only_so_many_inheriting_types_are_searched_for_overrides(indexed):
    count = MAX_OVERRIDING_TYPES + 5
    subclasses = {
        f"src/web/Rule{n}.java": ALLOW_LIST.replace("AllowListPlugin", f"Rule{n}")
        for n in range(count)
    }
    with indexed({"src/web/Plugin.java": HOOK, **subclasses}) as backends:
        hook = _uri(backends, "src/web/Plugin.java", "Plugin.shouldAllowRequest")
        delegates = delegation([hook], backends, limit=2 * count).delegates
    assert len(delegates) == MAX_OVERRIDING_TYPES
