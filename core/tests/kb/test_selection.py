"""The selection toolkit over a real index: budget spent, depth explained, caps kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contextfuse.selection import SelectionPolicy, select_fragments


def _many_functions(count: int) -> str:
    return "\n\n".join(
        f"def handler_{i}(request):\n    '''Handle case {i}.'''\n    return request + {i}\n"
        for i in range(count)
    )


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


def test_what_the_map_leaves_unused_is_spent_on_code(new_repo, write, build, opened) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    budget = 1500
    fragments = select_fragments(_scores(kb), kb, budget, strategy="t")
    assert sum(f.token_count for f in fragments) >= 0.9 * budget


def test_every_fragment_says_why_it_got_its_depth(new_repo, write, build, opened) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(12) for i in range(4)}
    )
    fragments = select_fragments(_scores(kb), kb, 1500, strategy="t")
    reasons = {f.metadata["depth_reason"].split(":")[0] for f in fragments}
    assert "full source" in reasons
    assert all(f.metadata["depth_reason"] for f in fragments)


def test_the_fragment_cap_holds_with_file_headers(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(3) for i in range(40)}
    kb = _kb(new_repo, write, build, opened, files)
    policy = SelectionPolicy(max_fragments=7)
    fragments = select_fragments(_scores(kb), kb, 50_000, strategy="t", policy=policy)
    assert len(fragments) <= 7


def test_a_fragment_with_redacted_text_says_so(new_repo, write, build, opened) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    kb = _kb(new_repo, write, build, opened, {"conf.py": f'TOKEN = "{secret}"\n'})
    scores = {uri: s for uri, s in _scores(kb).items() if "/conf.py" in uri}
    (fragment,) = select_fragments(scores, kb, 500, strategy="t")
    assert fragment.metadata["redacted"] == "1" and secret not in fragment.content


def test_code_leaves_fragment_slots_for_the_file_map(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(30) for i in range(12)}
    kb = _kb(new_repo, write, build, opened, files)
    policy = SelectionPolicy(max_fragments=30, whole_file_tokens=0)
    fragments = select_fragments(_scores(kb), kb, 200_000, strategy="t", policy=policy)
    assert any(f.detail_depth == 2 for f in fragments)


def test_a_larger_map_slot_share_maps_more_files(new_repo, write, build, opened) -> None:
    files = {f"pkg/m{i}.py": "import os\n\n\n" + _many_functions(30) for i in range(40)}
    kb = _kb(new_repo, write, build, opened, files)

    def mapped(share: float) -> int:
        policy = SelectionPolicy(max_fragments=30, whole_file_tokens=0, map_slot_share=share)
        fragments = select_fragments(_scores(kb), kb, 200_000, strategy="t", policy=policy)
        return sum(f.detail_depth == 2 for f in fragments)

    assert mapped(0.5) > mapped(0.2)


def test_a_method_is_shown_in_full_inside_a_class_shown_by_signatures(
    new_repo, write, build, opened
) -> None:
    methods = "".join(
        f'    def step_{i}(self, value):\n        """Step {i}."""\n'
        + "".join(f"        value = value * {i} + {j}\n" for j in range(6))
        + "        return value\n\n"
        for i in range(40)
    )
    kb = _kb(new_repo, write, build, opened, {"pipeline.py": f"class Pipeline:\n{methods}"})
    cls = "project://sel/pipeline.py#Pipeline"
    method = "project://sel/pipeline.py#Pipeline.step_7"
    fragments = select_fragments({cls: 1.0, method: 0.9}, kb, 4000, strategy="t")
    depths = {f.uko_node: f.detail_depth for f in fragments}
    assert depths == {cls: 4, method: 9}


def test_when_the_fragment_cap_binds_the_best_files_are_shown_whole(
    new_repo, write, build, opened
) -> None:
    kb = _kb(
        new_repo, write, build, opened, {f"pkg/m{i}.py": _many_functions(40) for i in range(6)}
    )
    policy = SelectionPolicy(max_fragments=12, whole_file_tokens=0)
    fragments = select_fragments(_scores(kb), kb, 20_000, strategy="t", policy=policy)
    whole = [
        f for f in fragments if f.metadata["depth_reason"].startswith("full source: the whole")
    ]
    assert whole and all("#" not in f.uko_node for f in whole)
    assert sum(f.token_count for f in fragments) <= 20_000
