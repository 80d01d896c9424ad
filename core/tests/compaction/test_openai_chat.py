"""The OpenAI-compatible provider against a real chat-completions server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from contextfuse.compaction import CompactRequest, collect_providers, compact
from contextfuse.compaction.openai_chat import OpenAIChatProvider
from contextfuse.flow import ModelCall, ProviderError

Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def reply(content: str, finish: str = "stop", status: int = 200) -> Behaviour:
    def behave(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        data = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        }
        send(handler, status, json.dumps(data).encode())

    return behave


def send(
    handler: BaseHTTPRequestHandler, status: int, raw: bytes, length: int | None = None
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw) if length is None else length))
    handler.end_headers()
    handler.wfile.write(raw)


class ChatServer:
    """A chat-completions endpoint whose behaviour each test sets."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = reply("{}")
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((dict(self.headers), body))
                if self.path != "/v1/chat/completions":
                    send(self, 404, b"{}")
                    return
                server.behaviour(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
    thread.join()


def provider(chat: ChatServer, **kwargs: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(base_url=chat.url, model="test-model", api_key="sk-test", **kwargs)


def call(timeout: float = 5.0) -> ModelCall:
    messages = ({"role": "system", "content": "s"}, {"role": "user", "content": "{}"})
    return ModelCall("generation", messages, {"records": []}, 100, timeout)


def test_a_reply_gives_text_usage_and_sends_the_chat_format(chat: ChatServer) -> None:
    chat.behaviour = reply('{"summaries": []}')
    answer = provider(chat).complete(call())
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == (
        '{"summaries": []}',
        120,
        30,
    )
    headers, body = chat.requests[0]
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "test-model" and body["max_tokens"] == 100
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_cost_is_unknown_without_prices_and_computed_with_them(chat: ChatServer) -> None:
    chat.behaviour = reply("{}")
    assert provider(chat).complete(call()).cost_usd is None
    priced = provider(chat, input_usd_per_mtok=1.0, output_usd_per_mtok=2.0)
    assert priced.complete(call()).cost_usd == pytest.approx((120 + 60) / 1_000_000)


def test_a_slow_server_is_a_timeout(chat: ChatServer) -> None:
    def slow(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        time.sleep(1.0)
        reply("{}")(handler, body)

    chat.behaviour = slow
    with pytest.raises(ProviderError, match="timed out after 0.2 s"):
        provider(chat).complete(call(timeout=0.2))


def test_a_server_error_is_a_provider_error_naming_the_status(chat: ChatServer) -> None:
    chat.behaviour = lambda handler, body: send(handler, 500, b'{"error": "overloaded"}')
    with pytest.raises(ProviderError, match="HTTP 500"):
        provider(chat).complete(call())


def test_a_truncated_response_body_is_a_provider_error(chat: ChatServer) -> None:
    def truncated(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send(handler, 200, b'{"choices": [{"mess', length=400)
        handler.close_connection = True

    chat.behaviour = truncated
    with pytest.raises(ProviderError, match="RemoteProtocolError"):
        provider(chat).complete(call())


def test_invalid_json_is_a_provider_error(chat: ChatServer) -> None:
    chat.behaviour = lambda handler, body: send(handler, 200, b"<html>gateway</html>")
    with pytest.raises(ProviderError, match="unreadable reply"):
        provider(chat).complete(call())


def test_a_reply_without_choices_is_a_provider_error(chat: ChatServer) -> None:
    chat.behaviour = lambda handler, body: send(handler, 200, b'{"choices": []}')
    with pytest.raises(ProviderError, match="IndexError"):
        provider(chat).complete(call())


def test_the_environment_configures_the_provider() -> None:
    env = {
        "CONTEXTFUSE_OPENAI_MODEL": "m",
        "CONTEXTFUSE_OPENAI_BASE_URL": "http://127.0.0.1:9/v1/",
        "OPENAI_API_KEY": "k",
    }
    configured = OpenAIChatProvider.from_env(env)
    assert configured is not None
    assert (configured.name, configured.model, configured.base_url) == (
        "openai",
        "m",
        "http://127.0.0.1:9/v1",
    )
    assert OpenAIChatProvider.from_env({}) is None


def summarizing_transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    messages += [{"role": "assistant", "content": f"{n}: " + "long text " * 80} for n in range(9)]
    return messages


def test_compaction_through_the_provider_replaces_units_with_its_summaries(
    chat: ChatServer,
) -> None:
    def model(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        payload = json.loads(body["messages"][1]["content"])
        if "items" in payload:
            rows = [{"id": i["id"], "choice": "summarize"} for i in payload["items"]]
            reply(json.dumps({"decisions": rows}))(handler, body)
        else:
            rows = [{"id": r["id"], "summary": "gist"} for r in payload["records"]]
            reply(json.dumps({"summaries": rows}))(handler, body)

    chat.behaviour = model
    request = CompactRequest(
        messages=summarizing_transcript(),
        decision_policy_ir={"providers": ["openai"]},
        policy_ir={"providers": ["openai"]},
    )
    result = compact(request, collect_providers(None, [provider(chat)]))
    assert result["messages"][1]["content"] == "[contextfuse summary of messages 1-1]\ngist"
    assert result["x_router"]["cost_usd"] is None
    assert result["x_router"]["usage"]["prompt_tokens"] == 240


def test_when_the_model_fails_the_policys_next_provider_decides(chat: ChatServer) -> None:
    chat.behaviour = lambda handler, body: send(handler, 500, b"{}")
    request = CompactRequest(
        messages=summarizing_transcript(),
        decision_policy_ir={"providers": ["openai", "offline"]},
    )
    result = compact(request, collect_providers(None, [provider(chat)]))
    events = result["x_router"]["decision_trace"]["flow_nodes"][2]["events"]
    assert [(e["provider"], e["outcome"]) for e in events] == [
        ("openai", "provider_error"),
        ("offline", "ok"),
    ]
    assert result["x_router"]["cost_usd"] is None
