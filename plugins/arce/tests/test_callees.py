"""The callee list: the functions the best matches call, on repositories indexed for real."""

from __future__ import annotations

from contextfuse import BackendSet, ContextRequest
from contextfuse_arce import ArceStrategy, ArceWeights
from contextfuse_arce.callees import callee_ranking

MANAGER = """package plugins;

public class PluginManager {
    public void exec(String service, String action) {
        Plugin plugin = getPlugin(service);
        handlers.get(action).execute(action);
    }

    public Plugin getPlugin(String service) {
        return instantiatePlugin(service);
    }

    private Plugin instantiatePlugin(String className) {
        return null;
    }
}

class Plugin {
    public void execute(String action) {
    }
}

class Job {
    public void execute(String action) {
    }
}
"""

QUEUE = """package plugins;

public class Queue {
    public void flush() {
        drain();
    }

    private void drain() {
    }
}
"""

TEST = """package plugins;

public class PluginManagerTest {
    public void testExec() {
    }
}
"""


def _uri(backends: BackendSet, path: str, symbol: str) -> str:
    return f"project://{backends.nodes.project}/{path}#{symbol}"


def test_a_method_called_by_name_inside_its_own_class_is_a_callee(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        exec_ = _uri(backends, "src/PluginManager.java", "PluginManager.exec")
        callees = callee_ranking([exec_], backends, limit=10)
    assert _uri(backends, "src/PluginManager.java", "PluginManager.getPlugin") in callees


def test_a_method_of_another_type_with_the_called_name_is_not_a_callee(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        exec_ = _uri(backends, "src/PluginManager.java", "PluginManager.exec")
        callees = callee_ranking([exec_], backends, limit=10)
    assert _uri(backends, "src/PluginManager.java", "Plugin.execute") not in callees


def test_the_helpers_of_the_best_caller_come_first(indexed):
    files = {"src/PluginManager.java": MANAGER, "src/Queue.java": QUEUE}
    with indexed(files) as backends:
        flush = _uri(backends, "src/Queue.java", "Queue.flush")
        get = _uri(backends, "src/PluginManager.java", "PluginManager.getPlugin")
        callees = callee_ranking([flush, get], backends, limit=10)
    assert callees == [
        _uri(backends, "src/Queue.java", "Queue.drain"),
        _uri(backends, "src/PluginManager.java", "PluginManager.instantiatePlugin"),
    ]


def test_the_callee_list_is_no_longer_than_its_limit(indexed):
    files = {"src/PluginManager.java": MANAGER, "src/Queue.java": QUEUE}
    with indexed(files) as backends:
        flush = _uri(backends, "src/Queue.java", "Queue.flush")
        get = _uri(backends, "src/PluginManager.java", "PluginManager.getPlugin")
        assert len(callee_ranking([flush, get], backends, limit=1)) == 1


def test_a_class_is_not_a_caller(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        manager = _uri(backends, "src/PluginManager.java", "PluginManager")
        assert callee_ranking([manager], backends, limit=10) == []


def test_a_plain_words_request_ranks_the_helpers_the_best_matches_call(indexed):
    files = {"src/PluginManager.java": MANAGER, "src/PluginManagerTest.java": TEST}
    with indexed(files) as backends:
        _, lists = ArceStrategy().signals(
            ContextRequest(query="how does exec find the plugin for a service"), backends
        )
    assert (
        _uri(backends, "src/PluginManager.java", "PluginManager.instantiatePlugin")
        in (lists["callees"])
    )


def test_a_request_naming_code_has_no_callee_list(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        _, lists = ArceStrategy().signals(
            ContextRequest(query="why does getPlugin return null"), backends
        )
    assert "mentions" in lists
    assert "callees" not in lists


def test_a_request_for_tests_has_no_callee_list(indexed):
    files = {"src/PluginManager.java": MANAGER, "src/PluginManagerTest.java": TEST}
    with indexed(files) as backends:
        _, lists = ArceStrategy().signals(
            ContextRequest(query="add unit tests for finding the plugin of a service"), backends
        )
    assert "callees" not in lists


def test_without_a_callee_weight_there_is_no_callee_list(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        _, lists = ArceStrategy(ArceWeights(callees=0.0)).signals(
            ContextRequest(query="how does exec find the plugin for a service"), backends
        )
    assert "callees" not in lists


def test_the_helpers_of_the_best_callees_follow_when_asked(indexed):
    with indexed({"src/PluginManager.java": MANAGER}) as backends:
        exec_ = _uri(backends, "src/PluginManager.java", "PluginManager.exec")
        one_hop = callee_ranking([exec_], backends, limit=10)
        two_hops = callee_ranking([exec_], backends, limit=10, second=1)
    helper = _uri(backends, "src/PluginManager.java", "PluginManager.instantiatePlugin")
    assert helper not in one_hop
    assert helper in two_hops
