"""The packing policy over a real index: a ranking goes in, the components spend the budget.

Each test ranks nodes of a real index with a fixed ranking and runs the whole pipeline (its
default components, no plugins), so what is specified is what any ranking strategy gets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextfuse.components.fusion import PackingPolicy
from contextfuse.components.protocols import ScoredFragment
from contextfuse.hookspecs import hookimpl
from contextfuse.models import ContextBudget, ContextFragment, StrategyCapabilities
from contextfuse.node_scoring import NodeScoringStrategy
from contextfuse.pipeline import ACMSPipeline
from contextfuse.plugin_manager import make_plugin_manager


def _many_functions(count: int) -> str:
    return "\n\n".join(
        f"def handler_{i}(request):\n    '''Handle case {i}.'''\n    return request + {i}\n"
        for i in range(count)
    )


class FixedRanking(NodeScoringStrategy):
    """Ranks the nodes it is given, by the scores it is given."""

    name = "fixed"
    capabilities = StrategyCapabilities(uses_text=True, resource_types=("*",))

    def __init__(self, scores: Mapping[str, float]) -> None:
        self._scores = dict(scores)

    def can_handle(self, request: Any, backends: Any) -> float:
        return 1.0

    def scores(self, request: Any, backends: Any) -> dict[str, float]:
        return self._scores

    def explain(self) -> str:
        return "a fixed ranking"


def _kb(
    new_repo: Callable[..., Any],
    write: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
    files: dict[str, str],
) -> Any:
    root = new_repo("sel", with_git=False)
    write(root, files)
    build(root)
    return opened(root)


def _scores(kb: Any) -> dict[str, float]:
    nodes = [n for f in kb.nodes.files() for n in [f, *kb.nodes.children(f.uri)]]
    return {n.uri: 1.0 / (i + 1) for i, n in enumerate(nodes)}


def _pipeline(policy: PackingPolicy | None = None, **components: Any) -> ACMSPipeline:
    config = {"fusion": {"packing": policy.model_dump()}} if policy else {}
    return ACMSPipeline(
        plugin_manager=make_plugin_manager(autoload=False), config=config, **components
    )


def _run(
    kb: Any,
    scores: Mapping[str, float],
    budget: int,
    policy: PackingPolicy | None = None,
    explain: bool = False,
) -> Any:
    """The payload of the fixed ranking ``scores`` over ``kb`` (no preamble)."""
    pipeline = _pipeline(policy)
    pipeline.register_strategy("fixed", FixedRanking(scores))
    with pipeline:
        payload = pipeline.run(
            "q",
            kb,
            ContextBudget(max_tokens=budget, reserved_tokens=0),
            strategies=["fixed"],
            preamble=False,
            explain=explain,
        )
    assert not explain or payload.explanation is not None
    return payload


def _pack(
    kb: Any, scores: Mapping[str, float], budget: int, policy: PackingPolicy | None = None
) -> list[ContextFragment]:
    return list(_run(kb, scores, budget, policy).fragments)


def test_what_the_map_leaves_unused_is_spent_on_code(new_repo, write, build, opened) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    budget = 1500
    fragments = _pack(kb, _scores(kb), budget)
    assert sum(f.token_count for f in fragments) >= 0.9 * budget


def test_the_fragment_cap_holds_with_file_headers(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(3) for i in range(40)}
    kb = _kb(new_repo, write, build, opened, files)
    policy = PackingPolicy(max_fragments=7, tokens_per_fragment=10**9)
    fragments = _pack(kb, _scores(kb), 50_000, policy)
    assert len(fragments) <= 7


def test_a_fragment_with_redacted_text_says_so(new_repo, write, build, opened) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    kb = _kb(new_repo, write, build, opened, {"conf.py": f'TOKEN = "{secret}"\n'})
    scores = {uri: s for uri, s in _scores(kb).items() if "/conf.py" in uri}
    (fragment,) = _pack(kb, scores, 500)
    assert fragment.metadata["redacted"] == "1" and secret not in fragment.content


def test_code_leaves_fragment_slots_for_the_file_map(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(30) for i in range(12)}
    kb = _kb(new_repo, write, build, opened, files)
    policy = PackingPolicy(max_fragments=30, tokens_per_fragment=10**9, whole_file_tokens=0)
    fragments = _pack(kb, _scores(kb), 200_000, policy)
    assert any(f.detail_depth == 2 for f in fragments)


def test_a_larger_map_slot_share_maps_more_files(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(30) for i in range(40)}
    kb = _kb(new_repo, write, build, opened, files)

    def mapped(share: float) -> int:
        policy = PackingPolicy(
            max_fragments=30,
            tokens_per_fragment=10**9,
            whole_file_tokens=0,
            map_slot_share=share,
            spend_target=0.0,
        )
        return sum(f.detail_depth == 2 for f in _pack(kb, _scores(kb), 200_000, policy))

    assert mapped(0.5) > mapped(0.2)


def _pipeline_class(methods: int) -> str:
    return "class Pipeline:\n" + "".join(
        f'    def step_{i}(self, value):\n        """Step {i}."""\n'
        + "".join(f"        value = value * {i} + {j}\n" for j in range(6))
        + "        return value\n\n"
        for i in range(methods)
    )


def test_a_method_is_shown_in_full_inside_a_class_shown_by_signatures(
    new_repo, write, build, opened
) -> None:
    kb = _kb(new_repo, write, build, opened, {"pipeline.py": _pipeline_class(40)})
    cls = "project://sel/pipeline.py#Pipeline"
    method = "project://sel/pipeline.py#Pipeline.step_7"
    # At 9000 tokens the class's source (3400) is more than one piece, its signatures (680)
    # are less than one outline.
    fragments = _pack(kb, {cls: 1.0, method: 0.9}, 9000)
    depths = {f.uko_node: f.detail_depth for f in fragments if "#" in f.uko_node}
    assert depths == {cls: 4, method: 9}


def test_when_the_fragment_cap_binds_the_best_files_are_shown_whole(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(40) for i in range(6)}
    )
    policy = PackingPolicy(max_fragments=12, tokens_per_fragment=10**9, whole_file_tokens=0)
    payload = _run(kb, _scores(kb), 20_000, policy, explain=True)
    whole = [
        row
        for row in payload.explanation["fragments"]
        if row["depth_reason"].startswith("full source: the whole file, in place")
    ]
    assert whole and all("#" not in row["uko_node"] for row in whole)
    assert all(row["depth_by"] == "budget_packer" for row in whole)
    assert payload.total_tokens <= 20_000


def test_every_fragment_says_which_component_chose_its_depth_and_why(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    pipeline = _pipeline()
    pipeline.register_strategy("fixed", FixedRanking(_scores(kb)))
    with pipeline:
        payload = pipeline.run(
            "q", kb, ContextBudget(max_tokens=1500, reserved_tokens=0), explain=True
        )
    assert payload.explanation is not None
    rows = payload.explanation["fragments"]
    assert rows and all(row["depth_reason"] for row in rows)
    assert {row["depth_by"] for row in rows} <= {"detail_depth_resolver", "budget_packer"}
    assert any(row["depth_reason"].startswith("full source") for row in rows)


def test_a_wrapper_on_the_packer_sees_more_candidates_than_it_keeps(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    seen: list[tuple[int, int]] = []

    class Counting:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def pack(
            self,
            scored: list[ScoredFragment],
            budget: int,
            detail_level_maps: Mapping[str, Any],
        ) -> Any:
            result = self.inner.pack(scored, budget, detail_level_maps)
            seen.append((len(scored), len(result.packed)))
            return result

    class Wrapper:
        @hookimpl(wrapper=True)
        def contextfuse_budget_packer(self, config: dict[str, Any]) -> Any:
            packer = yield
            return Counting(packer)

    pm = make_plugin_manager(autoload=False)
    pm.register(Wrapper(), name="counting")
    pipeline = ACMSPipeline(plugin_manager=pm)
    pipeline.register_strategy("fixed", FixedRanking(_scores(kb)))
    with pipeline:
        payload = pipeline.run("q", kb, ContextBudget(max_tokens=800, reserved_tokens=0))
    ((received, kept),) = seen
    assert kept == len(payload.fragments)
    assert received > kept > 0


def test_the_preamble_room_is_reserved_before_packing(new_repo, write, build, opened) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    pipeline = _pipeline()
    pipeline.register_strategy("fixed", FixedRanking(_scores(kb)))
    with pipeline:
        payload = pipeline.run(
            "q", kb, ContextBudget(max_tokens=2000, reserved_tokens=0), explain=True
        )
    assert payload.explanation is not None
    reserve = payload.explanation["preamble_reserve"]
    assert reserve > 0
    assert payload.explanation["available_tokens"] == 2000 - reserve
    assert payload.total_tokens <= 2000 - reserve
    assert payload.explanation["dropped_by_overage_guard"] == 0


_SHOP = "project://sel/shop"


def _cart_and_pricing(
    new_repo: Callable[..., Any],
    write: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
) -> tuple[Any, dict[str, float], int]:
    """Three methods of one class in one file, one better function in another; the budget
    holds the largest of them at full source and little else."""
    cart = "".join(
        f"    def step_{i}(self, value):\n        return value + {i}\n\n" for i in range(3)
    )
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {
            "shop/cart.py": f"class Cart:\n{cart}",
            "shop/pricing.py": "def round_price(value):\n    return round(value, 2)\n",
        },
    )
    scores = {
        f"{_SHOP}/cart.py#Cart.step_0": 0.9,
        f"{_SHOP}/cart.py#Cart.step_1": 0.8,
        f"{_SHOP}/cart.py#Cart.step_2": 0.7,
        f"{_SHOP}/pricing.py#round_price": 1.0,
    }
    room = max(f.token_count for f in _pack(kb, scores, 4000) if f.detail_depth == 9)
    return kb, scores, room


def _full_source_in(kb: Any, scores: Mapping[str, float], room: int, **policy: Any) -> set[str]:
    """The nodes shown at full source in ``room`` tokens, the map and the spend target off."""
    chosen = PackingPolicy(map_share=0.0, max_piece_share=1.0, spend_target=0.0, **policy)
    return _full_source(_pack(kb, scores, room, chosen))


def test_code_concentrates_in_the_file_with_the_most_evidence(
    new_repo, write, build, opened
) -> None:
    kb, scores, room = _cart_and_pricing(new_repo, write, build, opened)

    def full_source(weight: float) -> set[str]:
        return _full_source_in(
            kb, scores, room, file_evidence_weight=weight, file_evidence_full_at=0
        )

    assert f"{_SHOP}/cart.py#Cart.step_0" in full_source(0.5)
    assert f"{_SHOP}/pricing.py#round_price" not in full_source(0.5)
    assert f"{_SHOP}/pricing.py#round_price" in full_source(0.0)


def test_a_files_evidence_counts_less_at_a_budget_below_file_evidence_full_at(
    new_repo, write, build, opened
) -> None:
    kb, scores, room = _cart_and_pricing(new_repo, write, build, opened)

    def full_source(full_at: int) -> set[str]:
        return _full_source_in(kb, scores, room, file_evidence_full_at=full_at)

    # At a budget of file_evidence_full_at the cart's evidence counts in full; at a
    # hundredth of it, the best node of the other file comes first.
    assert f"{_SHOP}/pricing.py#round_price" not in full_source(room)
    assert f"{_SHOP}/pricing.py#round_price" in full_source(100 * room)


def test_a_large_budget_is_spent_by_whole_files_when_the_candidates_run_out(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(40) for i in range(6)}
    )
    # Three functions of each file are ranked: their files hold what the budget can buy.
    few = {
        f"{f.uri}#handler_{n}": 1.0 / (i + n + 1)
        for i, f in enumerate(kb.nodes.files())
        if f.path.endswith(".py")
        for n in range(3)
    }
    files = kb.nodes.get_renderings([uri.split("#")[0] for uri in few], (9,))
    budget = sum(r[9].token_count for r in files.values())
    fragments = _pack(kb, few, budget)
    assert sum(f.token_count for f in fragments) >= 0.95 * budget
    assert any("#" not in f.uko_node and f.detail_depth == 9 for f in fragments)


def test_a_files_header_comes_with_its_first_full_source_symbol(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"cart.py": '"""The shopping cart."""\n\nimport os\n\n\n' + _many_functions(30)},
    )
    scores = {"project://sel/cart.py#handler_3": 1.0}
    (code, header) = _pack(kb, scores, 2000, PackingPolicy(spend_target=0.0))
    assert code.uko_node.endswith("#handler_3") and code.detail_depth == 9
    assert header.uko_node == "project://sel/cart.py#<header>" and header.detail_depth == 9
    assert header.content == '"""The shopping cart."""\n\nimport os'
    assert header.provenance.location == "L1-L3"


def test_a_function_whose_signatures_are_its_whole_source_is_shown_at_full_source(
    new_repo, write, build, opened
) -> None:
    kb = _kb(new_repo, write, build, opened, {"calc.py": "def double(x): return 2 * x\n"})
    scores = {uri: s for uri, s in _scores(kb).items() if uri.endswith("#double")}
    policy = PackingPolicy(whole_file_tokens=0, whole_file_share=0.0, spend_target=0.0)
    (fragment,) = _pack(kb, scores, 500, policy)
    assert (fragment.content, fragment.detail_depth) == ("def double(x): return 2 * x", 9)


def _function(name: str, lines: int) -> str:
    body = "\n".join(f"    step_{i} = request.get('field_{i}')" for i in range(lines))
    return f"def {name}(request):\n{body}\n    return request\n"


def test_a_piece_is_sized_against_the_budget_not_what_the_preamble_leaves(
    new_repo, write, build, opened
) -> None:
    kb = _kb(new_repo, write, build, opened, {"core.py": _function("handle", 40)})
    (node,) = [uri for uri in _scores(kb) if uri.endswith("#handle")]
    tokens = kb.nodes.get_renderings([node], [9])[node][9].token_count
    budget = -(-tokens * 10 // 3)  # the piece fits 30% of the budget, not 30% less the reserve
    pipeline = _pipeline()
    pipeline.register_strategy("fixed", FixedRanking({node: 1.0}))
    with pipeline:
        payload = pipeline.run(
            "q", kb, ContextBudget(max_tokens=budget, reserved_tokens=0), explain=True
        )
    assert payload.explanation is not None and payload.explanation["preamble_reserve"] > 0
    assert [(f.uko_node, f.detail_depth) for f in payload.fragments] == [(node, 9)]


def _shown(
    new_repo, write, build, opened, test_rank: float, budget: int = 600, spend_target: float = 0.0
) -> list[ContextFragment]:
    """Files shown at outline depth when one test file is scored ``test_rank`` beside a
    module's functions (1.0), a helper module (0.5) and another test file (0.6)."""
    test = _many_functions(3).replace("handler_", "test_handler_")
    files = {
        "pkg/core.py": _many_functions(30),
        "pkg/helpers.py": _many_functions(3),
        "tests/test_core.py": test,
        "tests/test_helpers.py": test,
    }
    kb = _kb(new_repo, write, build, opened, files)
    scores: dict[str, float] = {}
    for node in [n for f in kb.nodes.files() for n in [f, *kb.nodes.children(f.uri)]]:
        if "/pkg/core.py" in node.uri:
            scores[node.uri] = 1.0 if node.kind != "file" else 0.9
        elif "/tests/test_core.py" in node.uri:
            scores[node.uri] = test_rank
        elif "/tests/" in node.uri:
            scores[node.uri] = 0.6
        elif "/pkg/helpers.py" in node.uri:
            scores[node.uri] = 0.5
    policy = PackingPolicy(whole_file_tokens=0, whole_file_share=0.0, spend_target=spend_target)
    return _pack(kb, scores, budget, policy)


def _path(fragment: ContextFragment) -> str:
    return fragment.provenance.resource_uri.split("/", 3)[-1]


def _mapped_paths(new_repo, write, build, opened, test_rank: float) -> set[str]:
    fragments = _shown(new_repo, write, build, opened, test_rank)
    return {_path(f) for f in fragments if f.detail_depth == 2}


def test_the_map_leaves_out_tests_when_no_best_candidate_is_a_test(
    new_repo, write, build, opened
) -> None:
    mapped = _mapped_paths(new_repo, write, build, opened, test_rank=0.6)
    assert "pkg/helpers.py" in mapped
    assert "tests/test_helpers.py" not in mapped


def test_the_map_shows_tests_when_tests_are_among_the_best_candidates(
    new_repo, write, build, opened
) -> None:
    assert "tests/test_helpers.py" in _mapped_paths(new_repo, write, build, opened, test_rank=2.0)


def test_code_passes_leave_out_tests_when_no_best_candidate_is_a_test(
    new_repo, write, build, opened
) -> None:
    fragments = _shown(new_repo, write, build, opened, test_rank=0.6, budget=3000)
    assert any(_path(f) == "pkg/helpers.py" for f in fragments)
    assert not [f for f in fragments if _path(f).startswith("tests/")]


def test_other_kinds_fill_what_the_requests_kinds_leave_unspent(
    new_repo, write, build, opened
) -> None:
    fragments = _shown(
        new_repo, write, build, opened, test_rank=0.6, budget=3000, spend_target=0.95
    )
    assert [f for f in fragments if _path(f).startswith("tests/") and f.detail_depth == 9]


# ---- value per token -------------------------------------------------------------------------


def _big_and_small(
    new_repo, write, build, opened, small: int
) -> tuple[Any, str, list[str], int, int]:
    """An index of one file: a big function ``handle`` and ``small`` small functions.
    Returns the index, handle's URI, the small ones' URIs, handle's tokens and theirs."""
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"api.py": _function("handle", 60) + "\n\n" + _many_functions(small)},
    )
    big = "project://sel/api.py#handle"
    smalls = [f"project://sel/api.py#handler_{i}" for i in range(small)]
    full = kb.nodes.get_renderings([big, *smalls], [9])
    return kb, big, smalls, full[big][9].token_count, sum(full[s][9].token_count for s in smalls)


def _full_source(fragments: list[ContextFragment]) -> set[str]:
    """The nodes of ``fragments`` shown at full source."""
    return {f.uko_node for f in fragments if f.detail_depth == 9}


def _value_policy(share: float = 0.0, first: int = 0, **fields: Any) -> PackingPolicy:
    """Code only, one piece may take the whole budget, no whole files, nothing to fill;
    ``share`` and ``first``: how much goes by relevance before value per token."""
    return PackingPolicy(
        map_share=0.0,
        max_piece_share=1.0,
        whole_file_tokens=0,
        whole_file_share=0.0,
        spend_target=0.0,
        max_fragments=None,
        relevance_first_share=share,
        relevance_first=first,
        **fields,
    )


def test_smaller_pieces_nearly_as_relevant_come_before_a_big_one(
    new_repo, write, build, opened
) -> None:
    kb, big, smalls, big_tokens, small_tokens = _big_and_small(
        new_repo, write, build, opened, small=12
    )
    scores = {big: 0.95, smalls[0]: 1.0, **{s: 0.9 for s in smalls[1:]}}
    budget = big_tokens + small_tokens - 1  # not room for all
    by_value = _full_source(_pack(kb, scores, budget, _value_policy()))
    assert set(smalls) <= by_value and big not in by_value
    by_relevance = _full_source(_pack(kb, scores, budget, _value_policy(share=1.0)))
    assert big in by_relevance


def test_the_best_candidates_come_first_whatever_their_size(new_repo, write, build, opened) -> None:
    kb, big, smalls, big_tokens, small_tokens = _big_and_small(
        new_repo, write, build, opened, small=100
    )
    scores = {big: 1.0, **{s: 0.9 for s in smalls}}
    budget = 2 * big_tokens
    assert small_tokens > budget  # by value per token alone, the small ones fill it
    assert big in _full_source(_pack(kb, scores, budget, _value_policy(first=1)))
    assert big not in _full_source(_pack(kb, scores, budget, _value_policy(first=0)))


def test_a_share_of_the_first_code_pass_goes_by_relevance_whatever_the_sizes(
    new_repo, write, build, opened
) -> None:
    kb, big, smalls, big_tokens, small_tokens = _big_and_small(
        new_repo, write, build, opened, small=100
    )
    scores = {big: 1.0, **{s: 0.9 for s in smalls}}
    budget = 2 * big_tokens + 2  # half of it holds the big piece
    assert small_tokens > budget
    assert big in _full_source(_pack(kb, scores, budget, _value_policy(share=0.5)))
    assert big not in _full_source(_pack(kb, scores, budget, _value_policy(share=0.0)))


_CLASS = "project://sel/pipeline.py#Pipeline"  # 3400 tokens; signatures 680, outline 450


def test_a_class_is_shown_by_its_relevant_methods_when_it_does_not_fit_whole(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"pipeline.py": _pipeline_class(40), "other.py": _function("handle", 40)},
    )
    methods = [f"{_CLASS}.step_7", f"{_CLASS}.step_8"]
    other = "project://sel/other.py#handle"
    scores = {_CLASS: 1.0, methods[0]: 0.9, methods[1]: 0.85, other: 0.8}
    # 3600 tokens hold the class (3400) or its two methods and the other function, not all.
    by_value = _full_source(_pack(kb, scores, 3600, _value_policy()))
    assert by_value == {*methods, other}
    assert _full_source(_pack(kb, scores, 3600, _value_policy(share=1.0))) == {_CLASS}


def test_a_class_whose_turn_comes_with_room_is_shown_whole_in_place_of_its_methods(
    new_repo, write, build, opened
) -> None:
    kb = _kb(new_repo, write, build, opened, {"pipeline.py": _pipeline_class(40)})
    scores = {_CLASS: 1.0, f"{_CLASS}.step_7": 0.9, f"{_CLASS}.step_8": 0.85}
    # The methods come first by value per token; then the class, with room for it whole.
    fragments = _pack(kb, scores, 4000, _value_policy())
    assert [(f.uko_node, f.detail_depth) for f in fragments] == [(_CLASS, 9)]


def test_a_class_too_big_for_its_signatures_in_one_outline_is_shown_by_its_outline(
    new_repo, write, build, opened
) -> None:
    kb = _kb(new_repo, write, build, opened, {"pipeline.py": _pipeline_class(40)})
    # At 7000 tokens one piece takes 2100 and one outline 560: the class's source (3400)
    # and its signatures (680) are too big, its outline (450) is not.
    payload = _run(kb, {_CLASS: 1.0}, 7000, PackingPolicy(spend_target=0.0), explain=True)
    shown = [(f.uko_node, f.detail_depth) for f in payload.fragments if "#" in f.uko_node]
    assert shown == [(_CLASS, 2)]
    (row,) = [r for r in payload.explanation["fragments"] if r["uko_node"] == _CLASS]
    assert row["depth_reason"] == "outline: its signatures are more than one outline may take"


def test_a_class_too_big_even_for_its_outline_is_left_out(new_repo, write, build, opened) -> None:
    kb = _kb(new_repo, write, build, opened, {"pipeline.py": _pipeline_class(40)})
    method = f"{_CLASS}.step_7"
    # At 4000 tokens one outline takes 320: less than the class's outline (450).
    payload = _run(kb, {_CLASS: 1.0, method: 0.9}, 4000, PackingPolicy(), explain=True)
    assert {f.uko_node: f.detail_depth for f in payload.fragments if "#" in f.uko_node} == {
        method: 9
    }
    (row,) = [r for r in payload.explanation["omitted"] if r["uko_node"] == _CLASS]
    assert row["reason"] == "even its outline is more than one outline may take"


def test_a_file_too_big_to_outline_is_mapped_by_the_outline_of_its_best_symbol(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"pipeline.py": _pipeline_class(40) + "\n\n" + _many_functions(40)},
    )
    # Only functions are shown as code: the class is reached through the map, where its
    # file's outline is more than one outline may take (560 at 7000 tokens).
    policy = PackingPolicy(spend_target=0.0, code_kinds=("function",))
    payload = _run(kb, {_CLASS: 1.0}, 7000, policy, explain=True)
    assert [(f.uko_node, f.detail_depth) for f in payload.fragments] == [(_CLASS, 2)]
    (row,) = payload.explanation["fragments"]
    assert row["depth_reason"] == "outline: stands in the file map for its file, too big to outline"


def test_a_files_header_leaves_out_the_licence_it_opens_with(
    new_repo, write, build, opened
) -> None:
    licence = "# Copyright 2024 The Authors.\n# Licensed under the MIT licence.\n\n"
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"cart.py": licence + '"""The shopping cart."""\n\nimport os\n\n\n' + _many_functions(30)},
    )
    scores = {"project://sel/cart.py#handler_3": 1.0}
    (_, header) = _pack(kb, scores, 2000, PackingPolicy(spend_target=0.0))
    assert header.uko_node == "project://sel/cart.py#<header>"
    assert header.content == '"""The shopping cart."""\n\nimport os'
    assert header.provenance.location == "L4-L6"


def test_a_symbol_standing_in_the_map_for_its_file_is_shown_deeper_when_room_is_left(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo,
        write,
        build,
        opened,
        {"api.py": _function("handle", 60) + "\n\n" + _many_functions(60)},
    )
    handle = "project://sel/api.py#handle"
    # The first code pass has half of 1000 tokens, less than handle's source (730); the map
    # then shows handle's outline for its file, and the code pass after it has room.
    policy = PackingPolicy(
        map_share=0.5,
        max_piece_share=1.0,
        whole_file_tokens=0,
        whole_file_share=0.0,
        spend_target=0.0,
    )
    assert [(f.uko_node, f.detail_depth) for f in _pack(kb, {handle: 1.0}, 1000, policy)] == [
        (handle, 9)
    ]
