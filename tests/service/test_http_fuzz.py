"""Fuzzing the running server: no request, however malformed, gets a 5xx or stops it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ALLOWED = {200, 413, 422}
FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)

roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", "robot", ""])
messages = st.lists(
    st.fixed_dictionaries(
        {"role": roles},
        optional={
            "content": scalars | st.lists(json_values, max_size=3),
            "tool_call_id": scalars,
            "tool_calls": json_values,
        },
    ),
    max_size=12,
)
policies = st.none() | json_values | st.fixed_dictionaries({"providers": json_values})
compact_bodies = st.fixed_dictionaries(
    {"messages": messages | json_values},
    optional={
        "target_ratio": scalars,
        "pinned_indices": json_values | st.lists(st.integers(-5, 30), max_size=5),
        "decision_policy_ir": policies,
        "policy_ir": policies,
    },
)
assemble_bodies = st.fixed_dictionaries(
    {},
    optional={
        "query": scalars,
        "project": st.sampled_from(["demo", "other", "../demo", ""]) | scalars,
        "budget": scalars,
        "reserved": scalars,
        "strategies": json_values,
        "plan_id": scalars,
        "explain": json_values,
    },
)


@pytest.fixture(scope="module")
def client(service: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service, timeout=60) as session:
        yield session


def check(response: httpx.Response) -> None:
    assert response.status_code in ALLOWED, response.text[:500]


def post_json(client: httpx.Client, path: str, body: Any) -> httpx.Response:
    # Python's JSON writer emits NaN and Infinity, which the server must refuse cleanly.
    raw = json.dumps(body).encode()
    return client.post(path, content=raw, headers={"content-type": "application/json"})


@FUZZ
@given(body=assemble_bodies)
def test_assemble_never_fails_on_any_json_body(client: httpx.Client, body: dict[str, Any]) -> None:
    check(post_json(client, "/v1/assemble", body))


@FUZZ
@given(body=compact_bodies)
def test_compact_never_fails_on_any_json_body(client: httpx.Client, body: dict[str, Any]) -> None:
    check(post_json(client, "/v1/compact", body))


@FUZZ
@given(body=json_values, path=st.sampled_from(["/v1/assemble", "/v1/compact"]))
def test_any_json_value_is_answered(client: httpx.Client, body: Any, path: str) -> None:
    check(post_json(client, path, body))


@FUZZ
@given(raw=st.binary(max_size=300), path=st.sampled_from(["/v1/assemble", "/v1/compact"]))
def test_any_bytes_are_answered(client: httpx.Client, raw: bytes, path: str) -> None:
    check(client.post(path, content=raw, headers={"content-type": "application/json"}))


def test_the_service_is_still_healthy_after_the_fuzzing(client: httpx.Client) -> None:
    assert client.get("/healthz").status_code == 200
