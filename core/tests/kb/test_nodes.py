"""Nodes and their renderings at depths 9, 4, 2 and 0."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import contextfuse
from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats
from contextfuse.tokenizer import default_tokenizer

P = "project://shop-repo/"
MODELS = P + "shop/models.py"
CART = MODELS + "#ShoppingCart"


def rendering(kb: BackendSet, uri: str, depth: int) -> str:
    return str(kb.nodes.get_renderings([uri], [depth])[uri][depth].content)


def test_a_python_file_has_a_node_per_class_function_and_method(kb: BackendSet) -> None:
    children = [n.uri for n in kb.nodes.children(MODELS)]
    assert children == [MODELS + "#Base", CART]
    methods = [n.qualname for n in kb.nodes.children(CART)]
    assert methods == [
        "ShoppingCart.__init__",
        "ShoppingCart.add_item",
        "ShoppingCart.recount",
        "ShoppingCart.empty",
    ]


def test_symbol_nodes_know_their_kind_parent_and_lines(kb: BackendSet) -> None:
    node = kb.nodes.get_nodes([CART + ".add_item"])[CART + ".add_item"]
    assert (node.kind, node.name, node.parent, node.language) == (
        "method",
        "add_item",
        CART,
        "python",
    )
    assert node.location == "L31-L33"
    assert node.file_uri == MODELS


def test_every_node_has_the_four_depths_with_real_token_counts(kb: BackendSet) -> None:
    uris = [n.uri for n in kb.nodes.files()]
    uris += [c.uri for u in uris for c in kb.nodes.children(u)]
    renderings = kb.nodes.get_renderings(uris)
    tokenizer = default_tokenizer()
    for uri in uris:
        assert sorted(renderings[uri]) == [0, 2, 4, 9], uri
        for found in renderings[uri].values():
            assert found.token_count == tokenizer.count(found.content), (uri, found.depth)


def test_depth_9_is_the_exact_source_of_the_node(
    kb: BackendSet, indexed: tuple[Path, IndexStats]
) -> None:
    root, _ = indexed
    lines = (root / "shop/models.py").read_text().split("\n")
    full = kb.nodes.get_renderings([CART], [9])[CART][9]
    assert full.location == "L16-L38"
    assert full.content == "\n".join(lines[15:38])
    assert full.content.startswith('@register(kind="model")\nclass ShoppingCart(Base):')


def test_a_file_at_depth_9_is_the_whole_file(
    kb: BackendSet, indexed: tuple[Path, IndexStats]
) -> None:
    root, _ = indexed
    assert rendering(kb, MODELS, 9) == (root / "shop/models.py").read_text()


def test_depth_4_keeps_signatures_decorators_and_docstrings(kb: BackendSet) -> None:
    assert rendering(kb, CART, 4) == (
        '@register(kind="model")\n'
        "class ShoppingCart(Base):\n"
        '    """A cart of items.\n'
        "\n"
        "    It holds at most MAX_ITEMS items.\n"
        '    """\n'
        '    owner: str = ""\n'
        "    limit = MAX_ITEMS\n"
        "    def __init__(self, owner: str, *, limit: int = MAX_ITEMS) -> None:\n"
        '        """Make an empty cart."""\n'
        "        ...\n"
        "    def add_item(self, item, count=1):\n"
        "        ...\n"
        "    def recount(self):\n"
        "        ...\n"
        "    def empty(self): return not self.items"
    )


def test_depth_4_of_a_file_has_docstring_imports_and_every_signature(kb: BackendSet) -> None:
    text = rendering(kb, MODELS, 4)
    assert text.startswith('"""Models of the shop."""\n\nimport os\nfrom .util import slugify\n')
    assert "MAX_ITEMS = 10" in text
    assert "    def save(self):\n        ...\n" in text
    assert "return slugify" not in text


def test_depth_2_is_an_outline_with_line_numbers(kb: BackendSet) -> None:
    assert rendering(kb, MODELS, 2) == (
        "L9 class Base\n"
        "L12   def save(self)\n"
        "L16 class ShoppingCart(Base)\n"
        "L26   def __init__(self, owner, *, limit)\n"
        "L31   def add_item(self, item, count)\n"
        "L35   def recount(self)\n"
        "L38   def empty(self)"
    )


def test_depth_0_is_one_line_with_path_and_summary(kb: BackendSet) -> None:
    assert rendering(kb, MODELS, 0) == "shop/models.py — Models of the shop."
    assert rendering(kb, CART, 0) == "shop/models.py#ShoppingCart — A cart of items."
    # Without a docstring the signature is the summary.
    assert rendering(kb, CART + ".recount", 0) == (
        "shop/models.py#ShoppingCart.recount — def recount(self)"
    )


def test_a_file_without_docstring_is_summarised_by_its_definitions(kb: BackendSet) -> None:
    assert rendering(kb, P + "shop/util.py", 0) == (
        "shop/util.py — defines slugify, unused_helper_function, titled"
    )


def test_renderings_of_lower_depths_are_never_longer(kb: BackendSet) -> None:
    found = kb.nodes.get_renderings([MODELS, CART, CART + ".empty"])
    for by_depth in found.values():
        assert by_depth[9].token_count >= by_depth[4].token_count >= by_depth[2].token_count


def test_the_content_hash_is_sha256_of_the_full_source(
    kb: BackendSet, indexed: tuple[Path, IndexStats]
) -> None:
    root, _ = indexed
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    (digest,) = conn.execute("SELECT content_hash FROM nodes WHERE uri = ?", (CART,)).fetchone()
    conn.close()
    expected = hashlib.sha256(rendering(kb, CART, 9).encode()).hexdigest()
    assert digest == expected


def test_markdown_is_split_by_heading_with_unique_slugs(kb: BackendSet) -> None:
    readme = P + "README.md"
    (shop,) = kb.nodes.children(readme)
    assert shop.uri == readme + "#shop"
    sections = kb.nodes.children(shop.uri)
    assert [(s.qualname, s.location) for s in sections] == [
        ("setup", "L5-L11"),
        ("setup-1", "L13-L15"),
    ]
    assert rendering(kb, readme, 2) == "L1 # Shop\nL5   ## Setup\nL13   ## Setup"


def test_restructured_text_is_split_by_section_titles(kb: BackendSet) -> None:
    guide = P + "docs/guide.rst"
    (top,) = kb.nodes.children(guide)
    assert (top.name, top.location) == ("Guide", "L1-L15")
    (carts,) = kb.nodes.children(top.uri)
    assert (carts.name, carts.location) == ("Carts", "L7-L15")
    assert [n.name for n in kb.nodes.children(carts.uri)] == ["Adding"]


def test_a_file_that_does_not_parse_is_indexed_whole_and_noted(
    kb: BackendSet, indexed: tuple[Path, IndexStats]
) -> None:
    _, stats = indexed
    broken = P + "shop/broken.py"
    assert kb.nodes.children(broken) == []
    assert rendering(kb, broken, 9) == "def oops(:\n    pass\n"
    assert "shop/broken.py: does not parse as Python: indexed as plain text" in stats.notes


def test_typescript_classes_methods_and_functions_are_nodes(kb: BackendSet) -> None:
    pytest.importorskip("tree_sitter_typescript")
    app = P + "web/app.ts"
    assert [n.qualname for n in kb.nodes.children(app)] == ["App", "start"]
    (run,) = kb.nodes.children(app + "#App")
    assert (run.qualname, run.kind, run.location) == ("App.run", "method", "L7-L10")
    assert run.summary == "Run the app."
    assert rendering(kb, app + "#App", 4) == (
        "/** The app. */\n"
        "export class App {\n"
        '  private name = "app";\n'
        "  /** Run the app. */\n"
        "  run(times: number): number {\n"
        "      ...\n"
        "  }\n"
        "}"
    )


def test_find_symbols_matches_names_and_qualnames_exactly(kb: BackendSet) -> None:
    assert [n.uri for n in kb.nodes.find_symbols("recount")] == [CART + ".recount"]
    assert [n.uri for n in kb.nodes.find_symbols("ShoppingCart.recount")] == [CART + ".recount"]
    assert kb.nodes.find_symbols("Recount") == []


def test_find_paths_matches_path_suffixes(kb: BackendSet) -> None:
    assert [n.uri for n in kb.nodes.find_paths("models.py")] == [MODELS]
    assert [n.uri for n in kb.nodes.find_paths("shop/models.py")] == [MODELS]
    assert kb.nodes.find_paths("odels.py") == []


def test_files_lists_file_nodes_by_path(kb: BackendSet) -> None:
    found = [n.path for n in kb.nodes.files()]
    assert found == sorted(found)
    assert all(n.kind == "file" for n in kb.nodes.files())


def test_without_tree_sitter_those_languages_are_whole_files_and_noted(
    new_repo: Callable[..., Any], tmp_path: Path
) -> None:
    root = new_repo("no-ts")
    src = Path(contextfuse.__file__).parents[1]
    script = (
        "import sys, json\n"
        "sys.modules['tree_sitter'] = None  # as if the extra were not installed\n"
        "from contextfuse.kb import index, open_backends\n"
        f"stats = index({str(root)!r}, contributors=[])\n"
        f"kb = open_backends({str(root)!r})\n"
        "children = kb.nodes.children('project://no-ts/web/app.ts')\n"
        "kb.nodes.close()\n"
        "print(json.dumps({'notes': stats.notes, 'children': len(children)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert '"children": 0' in done.stdout
    assert "2 typescript file(s) indexed as plain text: tree-sitter is not installed" in done.stdout


TREE_SITTER_SAMPLES = {
    "cart.go": (
        "tree_sitter_go",
        "package shop\n\n// Cart holds items.\ntype Cart struct {\n\tItems []string\n}\n\n"
        "// Add puts an item in the cart.\nfunc (c *Cart) Add(item string) {\n"
        "\tc.Items = append(c.Items, item)\n}\n\nfunc New() *Cart {\n\treturn &Cart{}\n}\n",
        [("Cart", "struct"), ("Cart.Add", "method"), ("New", "function")],
    ),
    "cart.rs": (
        "tree_sitter_rust",
        "/// A cart.\npub struct Cart {\n    items: Vec<String>,\n}\n\nimpl Cart {\n"
        "    /// Add an item.\n    pub fn add(&mut self, item: String) {\n"
        "        self.items.push(item);\n    }\n}\n\npub trait Store {\n"
        "    fn save(&self) -> bool;\n}\n",
        [("Cart", "struct"), ("Cart.add", "method"), ("Store", "trait"), ("Store.save", "method")],
    ),
    "Cart.java": (
        "tree_sitter_java",
        "package shop;\n\n/** A cart. */\npublic class Cart extends Base {\n"
        "    private int count = 0;\n\n    /** Add an item. */\n    @Override\n"
        "    public void add(String item) {\n        count += 1;\n    }\n}\n",
        [("Cart", "class"), ("Cart.add", "method")],
    ),
    "cart.js": (
        "tree_sitter_javascript",
        "/** A cart. */\nclass Cart extends Base {\n  add(item) {\n    return item;\n  }\n}\n\n"
        "const make = (x) => {\n  return new Cart(x);\n};\n",
        [("Cart", "class"), ("Cart.add", "method"), ("make", "function")],
    ),
    "router.js": (
        "tree_sitter_javascript",
        "var proto = module.exports = function (options) {\n  return options;\n};\n\n"
        "/** Dispatch a request. */\nproto.handle = function handle(req, res) {\n"
        "  return req;\n};\n\nLayer.prototype.match = function match(path) {\n"
        "  return path;\n};\n\nexports.compile = (x) => x;\n",
        [
            ("proto", "function"),
            ("proto.handle", "method"),
            ("Layer.match", "method"),
            ("exports.compile", "method"),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(TREE_SITTER_SAMPLES))
def test_tree_sitter_languages_get_symbol_nodes(
    name: str,
    new_repo: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    grammar, source, expected = TREE_SITTER_SAMPLES[name]
    pytest.importorskip(grammar)
    root = new_repo("langs", with_git=False)
    write(root, {f"src/{name}": source})
    build(root)
    kb = opened(root)
    uri = f"project://langs/src/{name}"
    found = kb.nodes.get_nodes([f"{uri}#{q}" for q, _ in expected])
    assert [(found[f"{uri}#{q}"].qualname, found[f"{uri}#{q}"].kind) for q, _ in expected] == (
        expected
    )
    assert kb.nodes.get_renderings([uri], [2])[uri][2].content.startswith("L")


def test_code_that_warns_when_parsed_is_indexed_silently(
    new_repo: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = new_repo("warns", with_git=False)
    (root / "regex.py").write_text('import re\n\n\ndef digits():\n    return re.compile("\\d+")\n')
    build(root)  # the test run turns warnings into errors
    assert [n.name for n in opened(root).nodes.children("project://warns/regex.py")] == ["digits"]
