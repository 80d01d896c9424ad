"""A call on a variable, field or parameter whose type is declared in scope links to the
method of that type, even when other types have a method so named."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def java(name: str, body: str, package: str = "p") -> str:
    return f"package {package};\npublic class {name} {{\n{body}}}\n"


JAVA_TYPES = {
    "p/PluginManager.java": java("PluginManager", "    public void exec(String s) {}\n"),
    "p/Other.java": java("Other", "    public void exec(String s) {}\n"),
}


def test_a_java_call_on_a_field_links_to_the_method_of_the_fields_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    exec_ = java(
        "Exec",
        "    private PluginManager pluginManager;\n"
        "    void run(String s) {\n        pluginManager.exec(s);\n    }\n",
    )
    calls = linked("javafield", {**JAVA_TYPES, "p/Exec.java": exec_})
    assert calls("project://javafield/p/Exec.java#Exec.run") == {"PluginManager.exec"}


def test_a_java_call_on_a_generic_local_links_to_the_raw_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    registry = java("Registry<T>", "    public void exec(String s) {}\n")
    exec_ = java(
        "Exec",
        "    void run(String s) {\n        Registry<List<String>> r = make();\n"
        "        r.exec(s);\n    }\n",
    )
    calls = linked(
        "javageneric",
        {**JAVA_TYPES, "p/Registry.java": registry, "p/Exec.java": exec_},
    )
    assert calls("project://javageneric/p/Exec.java#Exec.run") == {"Registry.exec"}


def test_a_java_call_on_a_parameter_typed_by_an_interface_links_to_its_method(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    interface = "package p;\npublic interface Host {\n    void exec(String s);\n}\n"
    exec_ = java("Exec", '    void run(Host host) {\n        host.exec("x");\n    }\n')
    calls = linked("javaiface", {**JAVA_TYPES, "p/Host.java": interface, "p/Exec.java": exec_})
    assert calls("project://javaiface/p/Exec.java#Exec.run") == {"Host.exec"}


def test_a_java_static_call_links_to_the_method_of_the_named_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    exec_ = java("Exec", '    void run() {\n        PluginManager.exec("x");\n    }\n')
    calls = linked("javastatic", {**JAVA_TYPES, "p/Exec.java": exec_})
    assert calls("project://javastatic/p/Exec.java#Exec.run") == {"PluginManager.exec"}


def test_a_java_type_named_twice_is_the_one_in_the_callers_package(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    exec_ = java("Exec", '    void run(Other o) {\n        o.exec("x");\n    }\n')
    elsewhere = java("Other", "    public void exec(String s) {}\n", package="q")
    calls = linked("javatwice", {**JAVA_TYPES, "q/Other.java": elsewhere, "p/Exec.java": exec_})
    uri = "project://javatwice/p/Exec.java#Exec.run"
    assert calls(uri, paths=True) == {"p/Other.java#Other.exec"}


GO_TYPES = (
    "package g\n\ntype Engine struct{}\n\ntype Context struct{}\n\n"
    "func (c *Context) Next() {}\n\nfunc (e *Engine) Next() {}\n\n"
)


def test_a_go_call_on_a_parameter_links_to_the_method_of_its_type_in_another_file(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    calls = linked(
        "goparam",
        {
            "types.go": GO_TYPES,
            "handle.go": "package g\n\nfunc handle(c *Context) {\n\tc.Next()\n}\n",
        },
    )
    assert calls("project://goparam/handle.go#handle") == {"Context.Next"}


def test_a_go_call_on_a_local_built_from_a_composite_literal_links_to_its_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    calls = linked(
        "golocal",
        {"g.go": GO_TYPES + "func run() {\n\tengine := &Engine{}\n\tengine.Next()\n}\n"},
    )
    assert calls("project://golocal/g.go#run") == {"Engine.Next"}


def test_a_go_method_receiver_does_not_type_a_same_named_variable_elsewhere(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    calls = linked(
        "goscope",
        {"g.go": GO_TYPES + "func run() {\n\te := get()\n\te.Next()\n}\n"},
    )
    assert calls("project://goscope/g.go#run") == set()


def test_a_go_call_on_a_type_of_another_package_skips_the_repository_type_so_named(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    conn = "package g\n\ntype Conn struct {\n\tconn net.Conn\n}\n\n"
    calls = linked(
        "gopackage",
        {
            "g.go": conn + "func (c *Conn) Close() {}\n\n"
            "func (c *Conn) Shutdown() {\n\tc.conn.Close()\n}\n",
            "h.go": "package g\n\ntype Other struct{}\n\nfunc (o *Other) Close() {}\n",
        },
    )
    assert calls("project://gopackage/g.go#Conn.Shutdown") == set()


def test_a_typescript_call_on_a_constructor_parameter_property_links_to_its_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_typescript")
    calls = linked(
        "tsfield",
        {
            "router.ts": "export class Router {\n  match(): void {}\n}\n",
            "other.ts": "export class Other {\n  match(): void {}\n}\n",
            "app.ts": 'import { Router } from "./router";\n'
            "export class App {\n  constructor(private readonly router: Router) {}\n"
            "  run(): void {\n    this.router.match();\n  }\n}\n",
        },
    )
    assert calls("project://tsfield/app.ts#App.run") == {"Router.match"}


def test_a_javascript_call_on_a_field_assigned_a_new_object_links_to_its_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_javascript")
    calls = linked(
        "jsfield",
        {
            "lib.js": "class Store {\n  save() {}\n}\nclass Other {\n  save() {}\n}\n"
            "class App {\n  constructor() {\n    this.store = new Store();\n  }\n"
            "  run() {\n    this.store.save();\n  }\n}\n",
        },
    )
    assert calls("project://jsfield/lib.js#App.run") == {"Store.save"}


PY_TYPES = {
    "client.py": "class Client:\n    def send(self):\n        return 1\n",
    "other.py": "class Other:\n    def send(self):\n        return 2\n",
}


def test_a_python_call_on_an_annotated_parameter_links_to_the_method_of_its_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    calls = linked(
        "pyparam",
        {
            **PY_TYPES,
            "app.py": "from client import Client\n\n\n"
            "def run(client: Client):\n    return client.send()\n",
        },
    )
    assert calls("project://pyparam/app.py#run") == {"Client.send"}


def test_a_python_call_on_an_attribute_set_in_init_links_to_the_method_of_its_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    calls = linked(
        "pyattr",
        {
            **PY_TYPES,
            "app.py": "from client import Client\n\n\nclass App:\n"
            "    def __init__(self):\n        self.client = Client()\n\n"
            "    def run(self):\n        return self.client.send()\n",
        },
    )
    assert calls("project://pyattr/app.py#App.run") == {"Client.send"}


def test_a_rust_call_on_a_reference_parameter_links_to_the_method_of_its_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_rust")
    calls = linked(
        "rustparam",
        {
            "src/lib.rs": "pub struct A;\nimpl A {\n    pub fn step(&self) {}\n}\n"
            "pub struct B;\nimpl B {\n    pub fn step(&self) {}\n}\n"
            "pub fn run(a: &A) {\n    a.step();\n}\n"
        },
    )
    assert calls("project://rustparam/src/lib.rs#run") == {"A.step"}


def test_a_call_on_a_type_the_repository_lacks_is_resolved_as_an_untyped_call(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    calls = linked(
        "pyforeign",
        {
            "client.py": "class Client:\n    def send(self):\n        return 1\n",
            "app.py": "def run(client: Session):\n    return client.send()\n",
        },
    )
    assert calls("project://pyforeign/app.py#run") == {"Client.send"}


def test_a_call_on_a_type_defined_twice_elsewhere_is_left_unresolved(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    calls = linked(
        "pyambiguous",
        {
            "a/client.py": "class Client:\n    def send(self):\n        return 1\n",
            "b/client.py": "class Client:\n    def send(self):\n        return 2\n",
            "app.py": "def run(client: Client):\n    return client.send()\n",
        },
    )
    assert calls("project://pyambiguous/app.py#run") == set()


def test_a_java_construction_of_a_nested_class_links_to_its_constructor(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    allow = java(
        "AllowList",
        "    static class Pattern {\n        Pattern(String s) {}\n    }\n"
        "    void add(String s) {\n        Pattern p = new Pattern(s);\n    }\n",
    )
    calls = linked("javanew", {"p/AllowList.java": allow})
    assert calls("project://javanew/p/AllowList.java#AllowList.add") == {
        "AllowList.Pattern.Pattern"
    }
