"""Large files and classes split into blocks, so no code is reachable only as a whole file."""

from __future__ import annotations

import pytest

from contextfuse.kb.parse import detect, parse
from contextfuse.kb.parse_pieces import GROUP_LINES, PIECE_LINES
from contextfuse.kb.parsed import ParsedFile, Symbol
from contextfuse.kb.render import render_file


def parsed(path: str, source: str) -> ParsedFile:
    language, _ = detect(path)
    if language != "python":
        pytest.importorskip(f"tree_sitter_{language}")
    return parse(source, source.split("\n"), language)


def blocks(found: ParsedFile) -> list[Symbol]:
    return [s for s in found.symbols if s.kind == "block"]


def uncovered(source: str, found: ParsedFile) -> list[str]:
    """Non-blank lines no symbol holds."""
    covered: set[int] = set()
    for symbol in found.symbols:
        covered.update(range(symbol.line_start, symbol.line_end + 1))
    return [
        line
        for number, line in enumerate(source.split("\n"), 1)
        if line.strip() and number not in covered
    ]


ROUTES = "const router = express.Router();\n\n" + "".join(
    f"router.get('/item/{i}', (req, res) => {{\n  res.send(load({i}));\n}});\n\n" for i in range(60)
)


def test_a_large_file_of_calls_has_every_line_in_a_symbol() -> None:
    found = parsed("routes.js", ROUTES)
    assert uncovered(ROUTES, found) == []
    assert all(b.line_end - b.line_start + 1 <= GROUP_LINES for b in blocks(found))


def test_blocks_are_named_by_their_first_statement() -> None:
    found = blocks(parsed("routes.js", ROUTES))
    assert found[0].name == "router.get"
    assert found[0].label == "router.get('/item/0', (req, res) => {"
    assert [b.qualname for b in found[:3]] == ["router.get", "router.get@2", "router.get@3"]


def test_a_small_file_has_no_blocks() -> None:
    source = "app.get('/a', handler);\napp.get('/b', handler);\napp.listen(3000);\n"
    assert blocks(parsed("small.js", source)) == []


def test_a_statement_longer_than_a_piece_is_opened_into_its_parts() -> None:
    tests = "".join(
        f"  it('case {i}', () => {{\n    expect(parse({i})).toBe({i});\n  }});\n"
        for i in range(PIECE_LINES // 3 + 10)
    )
    source = f"describe('parse', () => {{\n{tests}}});\n"
    found = blocks(parsed("parse.test.js", source))
    assert found[0].qualname == "describe"
    assert found[0].line_end - found[0].line_start + 1 > PIECE_LINES
    assert {b.parent for b in found[1:]} == {"describe"}
    assert all(b.line_end - b.line_start + 1 <= GROUP_LINES for b in found[1:])


def test_imports_are_never_part_of_a_block() -> None:
    imports = "".join(f"import mod{i} from './mod{i}.js';\n" for i in range(20))
    calls = "".join(f"register(handler{i}, {{ priority: {i} }});\n" for i in range(PIECE_LINES))
    source = imports + "\n" + calls
    found = blocks(parsed("plugins.js", source))
    assert found
    assert min(b.line_start for b in found) > 20


def test_a_comment_goes_with_the_statement_after_it() -> None:
    source = "".join(f"// step {i}\nrunStep({i}, 3);\n" + "log(done);\n" * 10 for i in range(20))
    lines = source.split("\n")
    found = blocks(parsed("pipeline.js", source))
    assert found
    assert not [b for b in found if lines[b.line_start - 2].startswith("// step")]
    assert found[0].name == "runStep"


def test_a_large_class_keeps_its_fields_in_its_signatures_not_in_blocks() -> None:
    fields = "".join(f"    private int field{i} = {i};\n" for i in range(PIECE_LINES))
    source = f"class Settings {{\n{fields}    void apply() {{}}\n}}\n"
    found = parsed("Settings.java", source)
    assert blocks(found) == []
    assert any("field0 = 0" in text for _, text in found.symbols[0].segments)


def test_a_struct_of_a_few_hundred_lines_stays_one_node() -> None:
    fields = "".join(f"\t// Field{i} is documented.\n\tField{i} int\n" for i in range(PIECE_LINES))
    source = f"package x\n\ntype Config struct {{\n{fields}}}\n"
    assert [s.kind for s in parsed("config.go", source).symbols] == ["struct"]


def test_blocks_are_in_their_container_outline_and_signatures() -> None:
    found = parsed("routes.js", ROUTES)
    file_node = render_file("p", "routes.js", ROUTES.split("\n"), found)[0]
    _, signatures, outline, _ = file_node.texts
    assert "L3 router.get('/item/0', (req, res) => {" in outline.split("\n")
    assert "router.get('/item/0', (req, res) => {" in signatures.split("\n")


def test_parents_come_before_their_children_in_line_order() -> None:
    found = parsed("routes.js", ROUTES).symbols
    seen: set[str] = set()
    for symbol in found:
        assert symbol.parent == "" or symbol.parent in seen
        seen.add(symbol.qualname)
    tops = [s.line_start for s in found if not s.parent]
    assert tops == sorted(tops)


def test_deeply_nested_long_data_is_split_to_a_bounded_depth() -> None:
    source = "const table = " + "[0,\n" * 3000 + "1" + "\n]" * 3000 + ";\n"
    found = parsed("table.js", source)
    assert found.note == ""
    assert 1 < len(found.symbols) < 20


def test_declarations_nested_deeper_than_the_walk_goes_leave_the_file_as_text() -> None:
    source = "namespace A {\n" * 3000 + "}\n" * 3000
    found = parsed("deep.ts", source)
    assert found.symbols == []
    assert "nested too deeply" in found.note


def test_a_long_comment_is_never_a_block() -> None:
    doc = "/*\nPackage mux routes requests.\n" + "More about it.\n" * (PIECE_LINES + 10) + "*/\n"
    source = "// Copyright\n\n" + doc + "package mux\n"
    assert blocks(parsed("doc.go", source)) == []


def test_rust_crate_attributes_and_module_declarations_are_not_blocks() -> None:
    header = (
        '#![doc(html_root_url = "https://docs.rs/x/1.0.0")]\n'
        "#![allow(\n    clippy::cast_lossless,\n    clippy::doc_markdown,\n)]\n\n"
        '#[cfg(feature = "alloc")]\nextern crate alloc;\n\n'
        "mod display;\nmod error;\npub mod parse;\n\n"
    )
    calls = "".join(f"static H{i}: u32 = {i};\n" for i in range(PIECE_LINES))
    found = blocks(parsed("lib.rs", header + "fn main() {}\n" + calls))
    assert found
    assert min(b.line_start for b in found) > header.count("\n")


def closure(lines: int) -> str:
    """A function declaring helpers and a class, with ``lines`` lines of filler code."""
    filler = "".join(f"  total += step({i});\n" for i in range(lines))
    return (
        "export function enablePlugin() {\n"
        "  function applyChanges(base, changes) {\n    return changes.reduce(merge, base);\n  }\n"
        "  class Recorder {\n    record(change) {\n      this.changes.push(change);\n    }\n  }\n"
        f"{filler}"
        "  loadPlugin({ applyChanges, Recorder });\n"
        "}\n"
    )


def test_a_function_longer_than_a_piece_has_its_inner_functions_as_symbols() -> None:
    found = {s.qualname: s for s in parsed("plugin.ts", closure(PIECE_LINES)).symbols}
    inner = found["enablePlugin.applyChanges"]
    assert (inner.kind, inner.parent, inner.line_start, inner.line_end) == (
        "function",
        "enablePlugin",
        2,
        4,
    )


def test_a_class_inside_a_long_function_keeps_its_methods() -> None:
    found = {s.qualname: s for s in parsed("plugin.ts", closure(PIECE_LINES)).symbols}
    assert found["enablePlugin.Recorder"].kind == "class"
    assert found["enablePlugin.Recorder.record"].kind == "method"


def test_a_function_of_a_piece_or_less_keeps_its_inner_functions_inside() -> None:
    found = [s.qualname for s in parsed("plugin.ts", closure(PIECE_LINES - 20)).symbols]
    assert found == ["enablePlugin"]


def test_the_other_statements_of_a_long_function_with_inner_functions_become_blocks() -> None:
    source = closure(PIECE_LINES)
    assert uncovered(source, parsed("plugin.ts", source)) == []


def test_a_long_function_that_declares_nothing_is_not_split_into_blocks() -> None:
    filler = "".join(f"  total += step({i});\n" for i in range(PIECE_LINES))
    found = parsed("sum.js", f"function sum() {{\n{filler}  return total;\n}}\n")
    assert [s.qualname for s in found.symbols] == ["sum"]


def test_a_module_wrapped_in_a_function_has_its_functions_as_symbols() -> None:
    filler = "".join(f"  register({i});\n" for i in range(PIECE_LINES))
    debounce = "  function debounce(fn) {\n    return fn;\n  }\n"
    source = f"(function (root) {{\n{debounce}{filler}}})(this);\n"
    found = {s.qualname: s for s in parsed("bundle.js", source).symbols}
    assert (found["debounce"].line_start, found["debounce"].kind) == (2, "function")


def test_a_function_in_parentheses_bound_to_a_name_is_a_function() -> None:
    source = "var runInContext = (function runInContext(context) {\n  return context;\n});\n"
    found = {s.qualname: s.kind for s in parsed("lib.js", source).symbols}
    assert found == {"runInContext": "function"}
