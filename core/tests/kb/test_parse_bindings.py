"""Values bound to names are symbols when they define something, in every parsed language.

The parsers are run on source text directly; the index-level behaviour (a re-index picks up
the new nodes) is at the end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import Any

import pytest

from contextfuse.kb.parse import detect, parse
from contextfuse.kb.parsed import ParsedFile, Qualnames


def parsed(path: str, source: str) -> ParsedFile:
    language, _ = detect(path)
    if language != "python":
        pytest.importorskip(f"tree_sitter_{'typescript' if language == 'tsx' else language}")
    return parse(source, source.split("\n"), language)


def kinds(path: str, source: str) -> dict[str, str]:
    """qualname -> kind of every symbol."""
    return {s.qualname: s.kind for s in parsed(path, source).symbols}


def test_a_typescript_export_built_by_a_call_is_a_variable() -> None:
    source = (
        'export const $ZodUnion = core.$constructor("$ZodUnion", (inst, def) => {\n'
        "  inst.a = 1;\n});\n"
    )
    assert kinds("schemas.ts", source) == {"$ZodUnion": "variable"}


def test_an_interface_and_a_const_of_the_same_name_are_both_kept() -> None:
    source = (
        "export interface $ZodUnion { options: string[] }\n"
        "export const $ZodUnion = core.$constructor('$ZodUnion', init);\n"
    )
    found = parsed("schemas.ts", source).symbols
    assert [(s.qualname, s.name, s.kind) for s in found] == [
        ("$ZodUnion", "$ZodUnion", "interface"),
        ("$ZodUnion@2", "$ZodUnion", "variable"),
    ]


def test_a_typed_export_of_a_regex_is_a_variable() -> None:
    source = "export const email: RegExp = /^[^@]+@[^@]+$/;\n"
    assert kinds("regexes.ts", source) == {"email": "variable"}


def test_a_typed_export_of_a_one_token_literal_is_not_a_symbol() -> None:
    assert kinds("version.ts", 'export const VERSION: string = "1.0";\n') == {}


def test_a_declared_typed_export_in_a_declaration_file_is_a_variable() -> None:
    source = "export declare const $ZodUnion: core.$constructor<$ZodUnion>;\n"
    assert kinds("schemas.d.ts", source) == {"$ZodUnion": "variable"}


def test_an_export_default_call_is_a_variable_named_default() -> None:
    source = "export default defineConfig({\n  plugins: [react()],\n});\n"
    assert kinds("vite.config.ts", source) == {"default": "variable"}


def test_a_top_level_value_built_by_a_call_is_a_variable_even_unexported() -> None:
    assert kinds("routes.js", "const router = express.Router();\n") == {"router": "variable"}


def test_a_require_is_an_import_not_a_symbol() -> None:
    assert kinds("app.js", "const express = require('express');\n") == {}


def test_a_require_wrapped_by_a_compiler_is_an_import_too() -> None:
    source = 'const z = __importStar(require("./v4/classic/external.cjs"));\n'
    assert kinds("index.cjs", source) == {}


def test_a_one_token_constant_is_not_a_symbol() -> None:
    assert kinds("limits.js", "const MAX = 5;\nexport const NAME = 'x';\n") == {}


def test_a_react_component_as_an_arrow_function_is_a_function() -> None:
    source = "export const Button = ({ label }) => {\n  return <button>{label}</button>;\n};\n"
    assert kinds("Button.tsx", source) == {"Button": "function"}


def test_the_methods_of_an_object_literal_are_its_members() -> None:
    source = "const api = {\n  get(url) { return 1; },\n  post: (url) => 2,\n  retries: 3,\n};\n"
    found = parsed("api.js", source).symbols
    assert [(s.qualname, s.kind, s.parent) for s in found] == [
        ("api", "variable", ""),
        ("api.get", "method", "api"),
        ("api.post", "method", "api"),
    ]


def test_a_typescript_namespace_holds_its_declarations() -> None:
    source = "namespace Shapes {\n  export function area(r: number) { return r * r; }\n}\n"
    assert kinds("shapes.ts", source) == {"Shapes": "namespace", "Shapes.area": "method"}


def test_a_go_var_holding_a_function_literal_is_a_function() -> None:
    source = "package x\n\nvar handler = func(c *Context) {\n\tc.Next()\n}\n"
    assert kinds("x.go", source) == {"handler": "function"}


def test_a_go_var_group_keeps_built_values_and_leaves_iota_constants() -> None:
    source = (
        'package x\n\nvar (\n\tErrMissing = errors.New("missing")\n\t_ Binder = (*JSON)(nil)\n'
        "\ta, b = 1, 2\n)\n\nconst (\n\tFirst Mode = iota\n\tSecond\n)\n"
    )
    assert kinds("x.go", source) == {"ErrMissing": "variable"}


def test_a_go_type_and_a_function_of_the_same_name_are_both_kept() -> None:
    source = "package x\n\ntype Default struct{}\n\nfunc Default() {}\n"
    assert kinds("x.go", source) == {"Default": "struct", "Default@2": "function"}


def test_a_rust_static_built_by_a_call_is_a_variable_and_a_plain_const_is_not() -> None:
    source = "pub static REGISTRY: Lazy<Map> = Lazy::new(Map::new);\nconst LIMIT: u8 = 4;\n"
    assert kinds("lib.rs", source) == {"REGISTRY": "variable"}


def test_a_rust_macro_rules_is_a_macro() -> None:
    source = "macro_rules! square {\n    ($x:expr) => {\n        $x * $x\n    };\n}\n"
    assert kinds("lib.rs", source) == {"square": "macro"}


def test_a_java_field_holding_a_lambda_is_a_method() -> None:
    source = (
        "class Rules {\n    static final Predicate<String> BLANK = s -> {\n"
        "        return s.isBlank();\n    };\n}\n"
    )
    assert kinds("Rules.java", source) == {"Rules": "class", "Rules.BLANK": "method"}


def test_a_java_field_holding_an_anonymous_class_keeps_its_methods() -> None:
    source = (
        "class Sorts {\n    static final Comparator<A> BY_NAME = new Comparator<A>() {\n"
        "        public int compare(A x, A y) { return 0; }\n    };\n}\n"
    )
    assert kinds("Sorts.java", source) == {
        "Sorts": "class",
        "Sorts.BY_NAME": "class",
        "Sorts.BY_NAME.compare": "method",
    }


def test_a_java_field_of_one_line_stays_in_its_class_signatures() -> None:
    source = "class Cart {\n    private final List<Item> items = new ArrayList<>();\n}\n"
    found = parsed("Cart.java", source).symbols
    assert [s.qualname for s in found] == ["Cart"]
    assert any("new ArrayList" in text for _, text in found[0].segments)


def test_a_python_value_from_a_lower_case_helper_is_a_line_of_its_module() -> None:
    source = "import logging\n\nlogger = logging.getLogger(__name__)\n"
    assert kinds("views.py", source) == {}


def test_an_unexported_value_from_a_lower_case_helper_is_not_a_symbol() -> None:
    assert kinds("log.ts", "const log = createLogger('app');\n") == {}
    assert kinds("x.go", "package x\n\nvar cache = newCache(10)\n") == {}


def test_python_constants_and_dunders_are_not_symbols() -> None:
    source = '__all__ = ["a"]\n__version__ = "1.0"\nMAX_ITEMS = 10\nNAMES = ("a", "b")\n'
    assert kinds("consts.py", source) == {}


def test_a_python_class_attribute_built_by_a_call_stays_in_its_class() -> None:
    source = "class Item(Model):\n    name = CharField(max_length=10)\n"
    assert kinds("models.py", source) == {"Item": "class"}


def test_same_named_definitions_keep_their_suffix_when_lines_are_added_above() -> None:
    body = "function read() {\n  return 1;\n}\n\nfunction read() {\n  return 2;\n}\n"
    before = [s.qualname for s in parsed("io.js", body).symbols]
    after = [s.qualname for s in parsed("io.js", "// a comment\n\n" + body).symbols]
    assert before == after == ["read", "read@2"]


def test_a_real_name_that_looks_suffixed_is_not_reused() -> None:
    names = Qualnames()
    assert [names.unique(n) for n in ("f@2", "f", "f")] == ["f@2", "f", "f@3"]


def test_a_reindex_of_an_index_parsed_by_the_old_parser_finds_the_new_symbols(
    new_repo: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = new_repo("upgrade", with_git=False)
    (root / "app.js").write_text("const app = express.Router();\n")
    build(root)
    index_file = root / ".contextfuse" / "index.db"
    with closing(sqlite3.connect(index_file)) as conn, conn:  # as an index of the old parser
        conn.execute("UPDATE files SET parser = 'treesitter-javascript/2'")
        conn.execute("DELETE FROM nodes WHERE kind != 'file'")
        conn.execute("DELETE FROM renderings WHERE node_id NOT IN (SELECT id FROM nodes)")
        conn.execute("DELETE FROM edges")
    build(root)
    found = opened(root).nodes.get_nodes(["project://upgrade/app.js#app"])
    assert found["project://upgrade/app.js#app"].kind == "variable"


def test_rust_items_inside_a_macro_call_are_symbols() -> None:
    source = (
        "cfg_rt! {\n    /// Spawns a task.\n    pub fn spawn(task: Task) -> Handle {\n"
        "        Handle::new(task)\n    }\n\n    pub struct Handle { id: u64 }\n}\n"
    )
    assert kinds("task.rs", source) == {"spawn": "function", "Handle": "struct"}
    # The parser reads whole files again afterwards.
    assert kinds("other.rs", "fn main() {}\n") == {"main": "function"}
