"""Calls on a method's own object (``this``, ``self``, a Go receiver, a bare name in a Java
class) link to the method of its own type, even when other types have a method so named."""

from __future__ import annotations

from collections.abc import Callable

import pytest

JAVA_OTHER = "package p;\npublic class Other {\n    void getPlugin(String n) {}\n}\n"


def test_a_bare_call_in_a_java_class_links_to_the_method_of_the_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    calls = linked(
        "javabare",
        {
            "p/Exec.java": "package p;\npublic class Exec {\n"
            "    void exec(String s) {\n        getPlugin(s);\n    }\n"
            "    void getPlugin(String n) {}\n}\n",
            "p/Other.java": JAVA_OTHER,
        },
    )
    assert calls("project://javabare/p/Exec.java#Exec.exec") == {"Exec.getPlugin"}


def test_a_bare_call_in_a_nested_java_class_links_to_the_outer_class_method(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_java")
    calls = linked(
        "javanested",
        {
            "p/Exec.java": "package p;\npublic class Exec {\n"
            "    void getPlugin(String n) {}\n"
            '    class Inner {\n        void go() {\n            getPlugin("x");\n        }\n'
            "    }\n}\n",
            "p/Other.java": JAVA_OTHER,
        },
    )
    assert calls("project://javanested/p/Exec.java#Exec.Inner.go") == {"Exec.getPlugin"}


GO_TYPES = (
    "package g\n\ntype Engine struct{}\n\ntype Context struct{}\n\n"
    "func (c *Context) reset() {}\n\nfunc (e *Engine) reset() {}\n\n"
)


def test_a_go_call_on_another_variable_links_to_its_type_not_the_receivers(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    calls = linked(
        "goother",
        {"g.go": GO_TYPES + "func (engine *Engine) serve(c *Context) {\n\tc.reset()\n}\n"},
    )
    assert calls("project://goother/g.go#Engine.serve") == {"Context.reset"}


def test_a_go_call_on_the_receiver_links_to_the_method_of_its_type(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_go")
    calls = linked(
        "goreceiver",
        {"g.go": GO_TYPES + "func (engine *Engine) serve(c *Context) {\n\tengine.reset()\n}\n"},
    )
    assert calls("project://goreceiver/g.go#Engine.serve") == {"Engine.reset"}


def test_a_rust_call_on_self_type_links_to_the_associated_function(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_rust")
    calls = linked(
        "rustself",
        {
            "src/lib.rs": "pub struct A;\nimpl A {\n    pub fn run() -> u32 {\n"
            "        Self::helper()\n    }\n    fn helper() -> u32 { 1 }\n}\n"
            "pub struct B;\nimpl B {\n    fn helper() -> u32 { 2 }\n}\n"
        },
    )
    assert calls("project://rustself/src/lib.rs#A.run") == {"A.helper"}


def test_a_typescript_call_on_this_links_to_the_method_of_the_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    pytest.importorskip("tree_sitter_typescript")
    calls = linked(
        "tsthis",
        {
            "a.ts": "export class A {\n  run(): void {\n    this.step();\n  }\n"
            "  step(): void {}\n}\n"
            "export class B {\n  step(): void {}\n}\n"
        },
    )
    assert calls("project://tsthis/a.ts#A.run") == {"A.step"}


def test_a_call_on_self_links_to_the_method_of_the_base_class(
    linked: Callable[[str, dict[str, str]], Callable[..., set[str]]],
) -> None:
    calls = linked(
        "pybase",
        {
            "base.py": "class Base:\n    def helper(self):\n        return 1\n",
            "view.py": "from base import Base\n\n\nclass View(Base):\n"
            "    def get(self):\n        return self.helper()\n",
            "other.py": "class Other:\n    def helper(self):\n        return 2\n",
        },
    )
    assert calls("project://pybase/view.py#View.get") == {"Base.helper"}
