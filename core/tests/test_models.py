"""The data model's validation rules (spec/acms-pipeline.md): each one rejects and accepts."""

from __future__ import annotations

import base64
import os
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from contextfuse import (
    ContextBudget,
    ContextFragment,
    ContextPayload,
    ContextRequest,
    ContextStrategyResult,
    FragmentProvenance,
    StrategyCapabilities,
)
from contextfuse.hashing import context_hash
from contextfuse.models import MAX_CONTENT_CHARS, MAX_METADATA_ENTRIES

PROV = FragmentProvenance(resource_uri="project://p/a.py")


def fragment(**fields):
    fields.setdefault("uko_node", "project://p/a.py")
    fields.setdefault("content", "x")
    fields.setdefault("token_count", 1)
    fields.setdefault("provenance", PROV)
    return ContextFragment(**fields)


def test_content_of_one_million_characters_is_accepted():
    assert len(fragment(content="a" * MAX_CONTENT_CHARS).content) == MAX_CONTENT_CHARS


def test_content_over_one_million_characters_is_rejected():
    with pytest.raises(ValidationError, match="content"):
        fragment(content="a" * (MAX_CONTENT_CHARS + 1))


def test_sixty_four_metadata_entries_are_accepted():
    assert len(fragment(metadata={str(i): "v" for i in range(64)}).metadata) == 64


def test_more_than_sixty_four_metadata_entries_are_rejected():
    with pytest.raises(ValidationError, match=f"at most {MAX_METADATA_ENTRIES}"):
        fragment(metadata={str(i): "v" for i in range(65)})


@pytest.mark.parametrize("score", [0.0, 0.5, 1.0])
def test_relevance_between_zero_and_one_is_accepted(score):
    assert fragment(relevance_score=score).relevance_score == score


@pytest.mark.parametrize("score", [-0.01, 1.01])
def test_relevance_outside_zero_to_one_is_rejected(score):
    with pytest.raises(ValidationError, match="relevance_score"):
        fragment(relevance_score=score)


def test_zero_token_count_is_accepted():
    assert fragment(token_count=0).token_count == 0


def test_negative_token_count_is_rejected():
    with pytest.raises(ValidationError, match="token_count"):
        fragment(token_count=-1)


@pytest.mark.parametrize("tier", ["hot", "warm", "cold"])
def test_the_three_tiers_are_accepted(tier):
    assert fragment(tier=tier).tier == tier


def test_an_unknown_tier_is_rejected():
    with pytest.raises(ValidationError, match="tier"):
        fragment(tier="lukewarm")


@pytest.mark.parametrize("depth", [0, 4, 9])
def test_depths_zero_to_nine_are_accepted(depth):
    assert fragment(detail_depth=depth).detail_depth == depth


@pytest.mark.parametrize("depth", [-1, 10])
def test_depths_outside_zero_to_nine_are_rejected(depth):
    with pytest.raises(ValidationError, match="detail_depth"):
        fragment(detail_depth=depth)


def test_fragment_ids_are_generated_ulids():
    a, b = fragment(), fragment()
    assert len(a.fragment_id) == 26 and a.fragment_id != b.fragment_id


def test_generated_ids_are_ascending_ulids_of_the_current_millisecond():
    from ulid import ULID

    from contextfuse.models import new_ulid

    before = time.time()
    ids = [new_ulid() for _ in range(200)]
    after = time.time()
    assert ids == sorted(set(ids))  # made in sequence, they sort in that order
    for value in ids:
        parsed = ULID.from_str(value)
        assert str(parsed) == value
        assert before - 0.002 <= parsed.timestamp <= after + 0.002


def test_ids_made_by_concurrent_threads_are_distinct_and_ascend_in_each_thread():
    from contextfuse.models import new_ulid

    made: list[list[str]] = []

    def make() -> None:
        mine = [new_ulid() for _ in range(2000)]
        made.append(mine)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(ids == sorted(ids) for ids in made)
    assert len({value for ids in made for value in ids}) == 8 * 2000


@given(st.integers(min_value=0, max_value=2**80 - 1))
def test_the_random_part_of_an_id_is_its_80_bits_in_crockford_base32(value):
    from contextfuse.models import _random_digits

    to_crockford = bytes.maketrans(
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    )
    expected = base64.b32encode(value.to_bytes(10, "big")).translate(to_crockford).decode()
    assert _random_digits(value) == expected


def test_ids_made_one_after_another_have_consecutive_random_parts():
    from ulid import ULID

    from contextfuse.models import new_ulid

    ids = [new_ulid() for _ in range(3000)]
    randoms = [int.from_bytes(ULID.from_str(value).bytes[6:], "big") for value in ids]
    assert randoms == list(range(randoms[0], randoms[0] + len(ids)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_ids_other_than_its_parents():
    from contextfuse.models import new_ulid

    new_ulid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its next id, to the parent, then out
        os.write(write, new_ulid().encode())
        os._exit(0)
    os.close(write)
    parents = new_ulid()
    os.waitpid(child, 0)
    with os.fdopen(read, "rb") as pipe:
        childs = pipe.read().decode()
    assert childs != parents
    assert childs[10:] != parents[10:]  # the random parts, whatever the milliseconds


def test_a_given_ulid_id_is_accepted():
    assert fragment(fragment_id="01ARZ3NDEKTSV4RRFFQ69G5FAV").fragment_id.startswith("01ARZ")


def test_an_id_that_is_not_a_ulid_is_rejected():
    with pytest.raises(ValidationError, match="not a ULID"):
        fragment(fragment_id="frag-1")


def test_timestamps_are_generated_in_utc():
    assert fragment().created_at.utcoffset() == timedelta(0)


def test_an_aware_timestamp_is_converted_to_utc():
    paris = timezone(timedelta(hours=1))
    created = fragment(created_at=datetime(2026, 1, 1, 12, tzinfo=paris)).created_at
    assert created == datetime(2026, 1, 1, 11, tzinfo=timezone.utc)
    assert created.tzinfo == timezone.utc


def test_a_naive_timestamp_is_rejected():
    with pytest.raises(ValidationError, match="timezone-aware"):
        fragment(created_at=datetime(2026, 1, 1, 12))


def test_fragments_are_frozen():
    with pytest.raises(ValidationError):
        fragment().content = "changed"


def test_max_tokens_of_one_is_accepted():
    assert ContextBudget(max_tokens=1, reserved_tokens=0).available_tokens == 1


def test_max_tokens_below_one_is_rejected():
    with pytest.raises(ValidationError, match="max_tokens"):
        ContextBudget(max_tokens=0, reserved_tokens=0)


def test_negative_reserved_tokens_are_rejected():
    with pytest.raises(ValidationError, match="reserved_tokens"):
        ContextBudget(max_tokens=10, reserved_tokens=-1)


def test_reserved_tokens_equal_to_max_are_rejected():
    with pytest.raises(ValidationError, match="must be less than max_tokens"):
        ContextBudget(max_tokens=512, reserved_tokens=512)


def test_available_tokens_are_max_minus_reserved():
    assert ContextBudget(max_tokens=2048, reserved_tokens=256).available_tokens == 1792


def test_budget_defaults_are_those_of_the_spec():
    budget = ContextBudget()
    assert (budget.max_tokens, budget.reserved_tokens) == (4096, 512)


def test_a_dumped_budget_validates_again():
    budget = ContextBudget(max_tokens=100, reserved_tokens=10)
    assert ContextBudget.model_validate(budget.model_dump()) == budget


def test_a_dumped_budget_with_a_wrong_available_count_is_rejected():
    with pytest.raises(ValidationError, match="available_tokens"):
        ContextBudget.model_validate(
            {"max_tokens": 100, "reserved_tokens": 10, "available_tokens": 5}
        )


def payload(*fragments, **fields):
    fields.setdefault("budget", ContextBudget(max_tokens=2048, reserved_tokens=256))
    return ContextPayload(plan_id="plan-1", fragments=fragments, **fields)


def test_payload_total_tokens_is_the_sum_of_fragment_tokens():
    assert payload(fragment(token_count=100), fragment(token_count=50)).total_tokens == 150


def test_payload_with_a_wrong_total_is_rejected():
    with pytest.raises(ValidationError, match="total_tokens"):
        payload(fragment(token_count=100), total_tokens=99)


def test_payload_within_budget_and_remaining_tokens():
    p = payload(fragment(token_count=350))
    assert p.is_within_budget and p.remaining_tokens == 1792 - 350


def test_payload_over_budget_is_not_within_budget():
    p = payload(fragment(token_count=2000))
    assert not p.is_within_budget and p.remaining_tokens == 0


def test_budget_used_is_the_share_of_available_tokens():
    assert payload(fragment(token_count=896)).budget_used == pytest.approx(0.5)


def test_context_hash_ignores_ids_and_timestamps():
    early = datetime(2020, 1, 1, tzinfo=timezone.utc)
    a = payload(fragment(content="alpha"), fragment(uko_node="project://p/b.py", content="b"))
    b = payload(
        fragment(content="alpha", created_at=early),
        fragment(uko_node="project://p/b.py", content="b"),
    )
    assert a.context_hash == b.context_hash and a.payload_id != b.payload_id


def test_context_hash_depends_on_content_order():
    one, two = fragment(content="one"), fragment(content="two")
    assert payload(one, two).context_hash != payload(two, one).context_hash


def test_context_hash_is_stable_across_runs():
    # A fixed value: the same content must hash alike on any machine and any run.
    p = payload(fragment(uko_node="project://p/a.py", content="def main(): ..."))
    assert p.context_hash == ("7850c28c153d234acbcccf90e26d917b60775a9cc337cbecc550161be631499b")


def test_context_hash_of_long_and_non_ascii_contents_is_stable():
    # The value the hash had when each field was fed to SHA-256 on its own.
    parts = [
        ("project://p/a.py#f", "def f():\n    return 1\n" * 300),
        ("project://p/b.py", "é ünïcode"),
    ]
    assert context_hash(parts) == (
        "9261ef49f69e29fd094c5b3f770b97e6dfdc1daf569d07620b40addd30a8a48b"
    )


def test_a_given_context_hash_that_disagrees_is_rejected():
    with pytest.raises(ValidationError, match="context_hash"):
        payload(fragment(), context_hash="0" * 64)


def test_provenance_map_is_keyed_by_fragment_id():
    f = fragment(provenance=FragmentProvenance(resource_uri="project://p/a.py", location="L1-L3"))
    assert payload(f).provenance_map == {
        f.fragment_id: {
            "resource_uri": "project://p/a.py",
            "location": "L1-L3",
            "resource_type": "unknown",
        }
    }


def test_a_payload_round_trips_through_json():
    p = payload(fragment(), preamble="summary", preamble_tokens=2)
    assert ContextPayload.model_validate_json(p.model_dump_json()) == p


def test_request_accepts_the_v1_mapping_form():
    request = ContextRequest.coerce({"preferred_strategies": ["relevance"], "team": "core"})
    assert request.preferred_strategies == ("relevance",)
    assert request.metadata == {"team": "core"}


def test_capabilities_defaults_are_those_of_the_spec():
    caps = StrategyCapabilities()
    assert (caps.uses_text, caps.uses_vector, caps.uses_graph, caps.uses_temporal) == (
        False,
        False,
        False,
        False,
    )
    assert caps.resource_types == () and caps.quality_score == 0.5


def test_capabilities_quality_above_one_is_rejected():
    with pytest.raises(ValidationError, match="quality_score"):
        StrategyCapabilities(quality_score=1.5)


def test_strategy_result_orders_fragments_by_relevance_then_node():
    low = fragment(uko_node="project://p/a.py", relevance_score=0.2)
    high_b = fragment(uko_node="project://p/b.py", relevance_score=0.9)
    high_a = fragment(uko_node="project://p/a2.py", relevance_score=0.9)
    result = ContextStrategyResult(strategy_name="s", fragments=(low, high_b, high_a))
    assert [f.uko_node for f in result.fragments] == [
        "project://p/a2.py",
        "project://p/b.py",
        "project://p/a.py",
    ]
    assert result.tokens_used == 3 and result.total_fragments == 3


# ---- build_fragment: the renderer's fragments, built without validation where it can -------

BUILT = {
    "uko_node": "project://p/a.py#f",
    "content": "def f():\n    return 1\n",
    "detail_depth": 9,
    "token_count": 9,
    "relevance_score": 0.75,
    "resource_uri": "project://p/a.py",
    "location": "L1-L2",
    "resource_type": "code",
    "tier": "hot",
    "metadata": {"strategy": "arce", "role": "candidate"},
    "created_at": datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc),
}


def validated(fields):
    fields = dict(fields)
    provenance = FragmentProvenance(
        resource_uri=fields.pop("resource_uri"),
        location=fields.pop("location"),
        resource_type=fields.pop("resource_type"),
    )
    if fields.get("created_at") is None:
        fields.pop("created_at", None)
    return ContextFragment(provenance=provenance, **fields)


@pytest.mark.parametrize("created_at", [BUILT["created_at"], None])
def test_a_built_fragment_equals_the_validated_one(created_at):
    from contextfuse.models import build_fragment

    fields = {**BUILT, "created_at": created_at}
    built, checked = build_fragment(**fields), validated(fields)
    same = {"fragment_id": built.fragment_id, "created_at": built.created_at}
    assert built == checked.model_copy(update=same)
    assert built.model_fields_set == checked.model_fields_set
    assert built.provenance.model_fields_set == checked.provenance.model_fields_set
    assert ContextFragment.model_validate_json(built.model_dump_json()) == built


def test_a_built_fragment_has_a_fresh_ulid_and_a_utc_time_of_its_own():
    from ulid import ULID

    from contextfuse.models import build_fragment

    one, two = build_fragment(**{**BUILT, "created_at": None}), build_fragment(**BUILT)
    assert one.fragment_id < two.fragment_id
    assert str(ULID.from_str(one.fragment_id)) == one.fragment_id
    assert one.created_at.tzinfo is timezone.utc


def test_a_built_fragment_keeps_no_reference_to_the_callers_metadata():
    from contextfuse.models import build_fragment

    metadata = {"role": "candidate"}
    built = build_fragment(**{**BUILT, "metadata": metadata})
    metadata["role"] = "changed"
    assert built.metadata == {"role": "candidate"}


@pytest.mark.parametrize(
    "field, value",
    [
        ("uko_node", ""),
        ("content", "x" * (MAX_CONTENT_CHARS + 1)),
        ("detail_depth", 10),
        ("detail_depth", -1),
        ("token_count", -1),
        ("token_count", "many"),
        ("relevance_score", 1.5),
        ("relevance_score", float("nan")),
        ("resource_uri", ""),
        ("tier", "lukewarm"),
        ("metadata", {f"k{i}": "v" for i in range(MAX_METADATA_ENTRIES + 1)}),
        ("metadata", {"count": 3}),
        ("created_at", datetime(2024, 5, 1, 12, 0)),
    ],
)
def test_a_value_outside_the_model_is_rejected_when_built_as_when_validated(field, value):
    from contextfuse.models import build_fragment

    fields = {**BUILT, field: value}
    with pytest.raises(ValidationError):
        validated(fields)
    with pytest.raises(ValidationError):
        build_fragment(**fields)


@pytest.mark.parametrize(
    "field, value",
    [
        ("detail_depth", 4.0),
        ("relevance_score", 1),
        ("token_count", True),
        ("created_at", datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))),
    ],
)
def test_a_value_validation_converts_is_converted_when_built_too(field, value):
    from contextfuse.models import build_fragment

    fields = {**BUILT, field: value}
    built, checked = build_fragment(**fields), validated(fields)
    assert getattr(built, field) == getattr(checked, field)
    assert type(getattr(built, field)) is type(getattr(checked, field))
