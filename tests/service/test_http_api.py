"""The HTTP API on a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextfuse.errors import ConfigError
from contextfuse.server.settings import ServerSettings, is_loopback


def post(url: str, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=60, **kwargs)


def test_healthz_lists_the_served_projects(service: str) -> None:
    response = httpx.get(service + "/healthz")
    assert response.json() == {"status": "ok", "projects": ["demo"], "stale": {}}


def test_assemble_returns_a_payload_within_budget(service: str) -> None:
    response = post(service, "/v1/assemble", {"query": "add two numbers", "project": "demo"})
    assert response.status_code == 200
    payload = response.json()
    assert payload["total_tokens"] <= 8000
    assert any("def add" in f["content"] for f in payload["fragments"])


def test_assemble_explains_when_asked(service: str) -> None:
    body = {"query": "add", "project": "demo", "budget": 2000, "explain": True}
    assert post(service, "/v1/assemble", body).json()["explanation"]["fragments"]


def test_a_project_that_is_not_served_is_a_422_naming_the_field(service: str) -> None:
    response = post(service, "/v1/assemble", {"query": "add", "project": "etc"})
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "field": "project",
            "rule": "served_project",
            "message": "project 'etc' is not served; served: demo",
        }
    ]


def test_a_path_is_not_a_project_name(service: str) -> None:
    response = post(service, "/v1/assemble", {"query": "add", "project": "../../etc"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "project"
    assert response.json()["detail"][0]["rule"] == "string_pattern_mismatch"


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"project": "demo"}, "query", "missing"),
        ({"query": "  ", "project": "demo"}, "query", "value_error"),
        ({"query": "q", "project": "demo", "budget": 0}, "budget", "greater_than_equal"),
        (
            {"query": "q", "project": "demo", "budget": 200, "reserved": 200},
            "reserved",
            "value_error",
        ),
        ({"query": "q", "project": "demo", "strategies": "simple"}, "strategies", "list_type"),
        ({"query": "q", "project": "demo", "colour": "red"}, "colour", "extra_forbidden"),
        ({"query": "q", "project": "demo", "strategies": ["nope"]}, "strategies", "known_strategy"),
    ],
)
def test_invalid_assemble_requests_are_422s_naming_field_and_rule(
    service: str, body: dict[str, Any], field: str, rule: str
) -> None:
    response = post(service, "/v1/assemble", body)
    assert response.status_code == 422
    assert (response.json()["detail"][0]["field"], response.json()["detail"][0]["rule"]) == (
        field,
        rule,
    )


def test_malformed_json_is_a_422(service: str) -> None:
    response = httpx.post(
        service + "/v1/assemble", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0] == {
        "field": "body",
        "rule": "json_invalid",
        "message": "JSON decode error",
    }


def test_a_body_over_the_limit_is_refused_with_413(service: str) -> None:
    body = {"query": "x" * (70 * 1024), "project": "demo"}
    response = post(service, "/v1/assemble", body)
    assert response.status_code == 413
    assert "limit of 65536 bytes" in response.json()["detail"]


def test_a_streamed_body_over_the_limit_is_refused_with_413(service: str) -> None:
    def chunks() -> Any:
        for _ in range(80):
            yield b" " * 1024

    response = httpx.post(
        service + "/v1/compact", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_strategies_are_listed_per_project(service: str) -> None:
    rows = httpx.get(service + "/v1/strategies", params={"project": "demo"}).json()
    names = {row["name"] for row in rows["projects"]["demo"]}
    assert "simple-keyword" in names


def test_the_openapi_schema_describes_the_endpoints(service: str) -> None:
    schema = httpx.get(service + "/openapi.json").json()
    assert {"/v1/assemble", "/v1/compact", "/v1/strategies", "/healthz"} <= set(schema["paths"])
    assert "AssembleRequest" in schema["components"]["schemas"]


def test_compact_with_offline_policies_runs_the_selective_flow(service: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix it"}]
    for n in range(12):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "f.py\n" * 200})
    body = {
        "messages": messages,
        "decision_policy_ir": {"providers": ["offline"]},
        "policy_ir": {"providers": ["offline"]},
    }
    result = post(service, "/v1/compact", body).json()
    assert result["compaction"]["flow"] == "selective-compaction"
    assert result["compaction"]["output_bytes"] < result["compaction"]["original_bytes"]
    assert result["messages"][0] == messages[0]


def test_compacted_responses_carry_the_unchanged_prefix_byte_for_byte(service: str) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Agent — ünïcode kept as is"},
        {"role": "user", "content": "fix it", "name": "dev"},
    ]
    for n in range(10):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "é.py\n" * 100})
    body = {"messages": messages, "decision_policy_ir": {"providers": ["offline"]}}
    response = post(service, "/v1/compact", body)
    fragments = response.json()["compaction"]["fragments"]
    first = min(f["start"] for f in fragments if f["action"] != "keep")
    prefix = json.dumps(messages[:first], ensure_ascii=False, separators=(",", ":"))[:-1]
    assert response.content.startswith(b'{"messages":' + prefix.encode())


def test_compact_refuses_a_policy_naming_an_unavailable_provider(service: str) -> None:
    body = {"messages": [{"role": "user", "content": "x"}], "policy_ir": {"providers": ["gpt"]}}
    response = post(service, "/v1/compact", body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "policy_ir.providers"
    assert response.json()["detail"][0]["rule"] == "available_provider"


def test_compact_reports_the_broken_message_by_index(service: str) -> None:
    body = {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]}
    detail = post(service, "/v1/compact", body).json()["detail"][0]
    assert detail["field"] == "messages.1"
    assert "tool_call_id" in detail["message"]


def test_concurrent_assemblies_give_the_same_payload(service: str) -> None:
    body = {"query": "main prints the sum", "project": "demo", "budget": 3000}
    with ThreadPoolExecutor(8) as pool:
        hashes = list(
            pool.map(
                lambda _: post(service, "/v1/assemble", body).json()["context_hash"], range(24)
            )
        )
    assert len(set(hashes)) == 1


def test_binding_beyond_loopback_requires_a_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="requires|exposes the service"):
        ServerSettings(host="0.0.0.0").check_exposure()
    ServerSettings(host="0.0.0.0", token="t" * 16).check_exposure()
    assert is_loopback("127.0.0.2") and is_loopback("::1") and not is_loopback("10.0.0.1")


def test_with_a_token_every_request_must_carry_it(serve: Callable[..., Any], repo: Path) -> None:
    token = "s3cret-token-0123456789"
    with serve(ServerSettings(projects={"demo": repo}, token=token)) as url:
        assert httpx.get(url + "/healthz").status_code == 401
        wrong = httpx.get(url + "/healthz", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].startswith("Bearer")
        right = httpx.get(url + "/healthz", headers={"Authorization": f"Bearer {token}"})
        assert right.status_code == 200


def test_the_index_is_refreshed_incrementally_after_the_interval(
    serve: Callable[..., Any], new_repo: Callable[[Path], Path], tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "live")
    with serve(ServerSettings(projects={"live": repo}, refresh_interval_s=0.2)) as url:
        body = {"query": "multiply_matrices", "project": "live", "budget": 2000}
        before = post(url, "/v1/assemble", body).json()
        assert not any("multiply_matrices" in f["content"] for f in before["fragments"])
        (repo / "matrix.py").write_text("def multiply_matrices(a, b):\n    return a @ b\n")
        time.sleep(0.3)
        after = post(url, "/v1/assemble", body).json()
        assert any("multiply_matrices" in f["content"] for f in after["fragments"])


def test_the_payload_round_trips_as_json(service: str) -> None:
    text = post(service, "/v1/assemble", {"query": "add", "project": "demo"}).text
    assert json.loads(text)["context_hash"]


def test_refreshes_under_concurrent_requests_never_break_an_assembly(
    serve: Callable[..., Any], new_repo: Callable[[Path], Path], tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "busy")
    with serve(ServerSettings(projects={"busy": repo}, refresh_interval_s=0)) as url:
        body = {"query": "add two numbers", "project": "busy", "budget": 2000}

        def assemble(n: int) -> int:
            (repo / f"extra_{n % 3}.py").write_text(f"def extra_{n}():\n    return {n}\n")
            return post(url, "/v1/assemble", body).status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(assemble, range(32)))
    assert statuses == [200] * 32


@pytest.mark.parametrize(
    "host", ["attacker.example", "attacker.example:8765", "10.0.0.5", "127.0.0.1.nip.io"]
)
def test_a_server_without_token_refuses_a_host_name_that_is_not_loopback(
    service: str, host: str
) -> None:
    response = httpx.post(
        service + "/v1/assemble",
        json={"query": "add", "project": "demo"},
        headers={"host": host, "origin": f"http://{host}"},
    )
    assert response.status_code == 403
    assert "is not allowed" in response.json()["detail"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:1234", "[::1]:8765", "LOCALHOST."])
def test_a_server_without_token_answers_loopback_host_names(service: str, host: str) -> None:
    assert httpx.get(service + "/healthz", headers={"host": host}).status_code == 200


def test_configured_host_names_are_answered(repo: Path, serve: Any) -> None:
    settings = ServerSettings(projects={"demo": repo}, allowed_hosts=("proxy.internal",))
    with serve(settings) as url:
        response = httpx.get(url + "/healthz", headers={"host": "proxy.internal:80"})
        refused = httpx.get(url + "/healthz", headers={"host": "other.internal"})
    assert (response.status_code, refused.status_code) == (200, 403)


def test_an_unknown_plan_id_is_a_422_naming_the_field(service: str) -> None:
    response = post(service, "/v1/assemble", {"query": "add", "project": "demo", "plan_id": "nope"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "plan_id"
    assert response.json()["detail"][0]["rule"] == "known_plan"


def test_a_lone_surrogate_in_a_transcript_is_a_422_not_a_500(service: str) -> None:
    body = b'{"messages": [{"role": "user", "content": "hi \\ud800 there"}]}'
    response = httpx.post(
        service + "/v1/compact", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert "lone surrogate" in response.text
