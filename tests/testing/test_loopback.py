"""The loopback model server against the real anthropic and openai SDKs."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from aimon_core.testing import (
    CutStream,
    Fault,
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ResetConnection,
    ScriptedToolCall,
    StallStream,
    Step,
    StreamError,
    loads_script,
)

PROVIDERS = ("anthropic", "openai")
USER: Any = [{"role": "user", "content": "hi"}]
READ = ScriptedToolCall(name="Read", input={"path": "src/app.py", "limit": [1, 2]}, id="t1")


@dataclass
class Outcome:
    """What one model call produced, the same shape for both providers."""

    text: str = ""
    tools: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    stop: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    pieces: dict[str, int] = field(default_factory=dict)  # delta kind -> how many arrived


def _anthropic_client(server: LoopbackModelServer, **options: Any) -> anthropic.AsyncAnthropic:
    options = {"max_retries": 0, **options}
    return anthropic.AsyncAnthropic(api_key="test", base_url=server.base_url, **options)


def _openai_client(server: LoopbackModelServer, **options: Any) -> openai.AsyncOpenAI:
    options = {"max_retries": 0, **options}
    return openai.AsyncOpenAI(api_key="test", base_url=server.openai_base_url, **options)


async def _anthropic_stream(server: LoopbackModelServer, **options: Any) -> Outcome:
    outcome = Outcome()
    async with (
        _anthropic_client(server, **options) as client,
        client.messages.stream(model="m", max_tokens=100, messages=USER) as stream,
    ):
        async for event in stream:
            if event.type == "content_block_delta":
                kind = event.delta.type
                outcome.pieces[kind] = outcome.pieces.get(kind, 0) + 1
        message = await stream.get_final_message()
    outcome.text = "".join(b.text for b in message.content if b.type == "text")
    outcome.tools = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    outcome.stop = {"end_turn": "end", None: None}.get(message.stop_reason, message.stop_reason)
    usage = message.usage
    outcome.usage = {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_input_tokens or 0,
        "cache_write": usage.cache_creation_input_tokens or 0,
    }
    return outcome


async def _openai_stream(server: LoopbackModelServer, **options: Any) -> Outcome:
    """Assemble chunks by hand, as aimon's OpenAI client does."""
    outcome = Outcome()
    calls: dict[int, list[str]] = {}
    async with _openai_client(server, **options) as client:
        stream = await client.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            if chunk.usage is not None:
                cached = chunk.usage.prompt_tokens_details
                cache_read = cached.cached_tokens or 0 if cached else 0
                cache_write = cached.cache_write_tokens or 0 if cached else 0
                outcome.usage = {
                    "input": chunk.usage.prompt_tokens - cache_read - cache_write,
                    "output": chunk.usage.completion_tokens,
                    "cache_read": cache_read,
                    "cache_write": cache_write,
                }
            for choice in chunk.choices:
                outcome.text += choice.delta.content or ""
                outcome.pieces["text"] = outcome.pieces.get("text", 0) + bool(choice.delta.content)
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, ["", "", ""])
                    call[0] = delta.id or call[0]
                    if delta.function is not None:
                        call[1] += delta.function.name or ""
                        call[2] += delta.function.arguments or ""
                        outcome.pieces["arguments"] = outcome.pieces.get("arguments", 0) + bool(
                            delta.function.arguments
                        )
                if choice.finish_reason is not None:
                    outcome.stop = {
                        "stop": "end",
                        "tool_calls": "tool_use",
                        "length": "max_tokens",
                    }[choice.finish_reason]
    outcome.tools = [(i, n, json.loads(a)) for i, n, a in (calls[k] for k in sorted(calls))]
    return outcome


STREAMERS: dict[str, Callable[..., Awaitable[Outcome]]] = {
    "anthropic": _anthropic_stream,
    "openai": _openai_stream,
}


def _stream(provider: str, steps: list[Step], **options: Any) -> Outcome:
    with LoopbackModelServer(steps) as server:
        return asyncio.run(STREAMERS[provider](server, **options))


# Successful replies: one table, both providers.


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_streams_in_pieces_and_assembles(provider: str) -> None:
    outcome = _stream(provider, [Reply(text="Hello from the loopback server")])
    assert outcome.text == "Hello from the loopback server"
    assert outcome.stop == "end"
    assert outcome.tools == []
    assert max(outcome.pieces.values()) >= 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_call_input_assembles_from_split_deltas(provider: str) -> None:
    glob = ScriptedToolCall(name="Glob", input={"pattern": "**/*.py"})
    outcome = _stream(provider, [Reply(text="Reading.", tool_calls=(READ, glob))])
    assert outcome.text == "Reading."
    assert outcome.stop == "tool_use"
    assert outcome.tools[0] == ("t1", "Read", {"path": "src/app.py", "limit": [1, 2]})
    generated_id, name, arguments = outcome.tools[1]
    assert (name, arguments) == ("Glob", {"pattern": "**/*.py"})
    assert generated_id.startswith("toolu_" if provider == "anthropic" else "call_")
    assert outcome.pieces["input_json_delta" if provider == "anthropic" else "arguments"] >= 4


@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_includes_cache_tokens(provider: str) -> None:
    reply = Reply(
        text="ok", input_tokens=12, output_tokens=34, cache_read_tokens=56, cache_write_tokens=78
    )
    outcome = _stream(provider, [reply])
    assert outcome.usage == {"input": 12, "output": 34, "cache_read": 56, "cache_write": 78}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_max_tokens_stop_is_reported(provider: str) -> None:
    assert _stream(provider, [Reply(text="trunc", stop="max_tokens")]).stop == "max_tokens"


def test_thinking_and_signature_arrive_from_anthropic() -> None:
    outcome = Outcome()

    async def run(server: LoopbackModelServer) -> None:
        async with (
            _anthropic_client(server) as client,
            client.messages.stream(model="m", max_tokens=100, messages=USER) as stream,
        ):
            kinds = [e.delta.type async for e in stream if e.type == "content_block_delta"]
            message = await stream.get_final_message()
        outcome.pieces = {kind: kinds.count(kind) for kind in kinds}
        thinking = message.content[0]
        assert thinking.type == "thinking"
        assert thinking.thinking == "Let me look at the file first."
        assert thinking.signature.startswith("loopback-")
        assert [b.type for b in message.content] == ["thinking", "text"]

    with LoopbackModelServer([Reply(thinking="Let me look at the file first.", text="Hi")]) as s:
        asyncio.run(run(s))
    assert outcome.pieces == {"thinking_delta": 2, "signature_delta": 1, "text_delta": 2}


def test_non_streamed_replies_for_both_providers() -> None:
    async def run(server: LoopbackModelServer) -> None:
        async with _anthropic_client(server) as client:
            message = await client.messages.create(model="m", max_tokens=9, messages=USER)
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
        assert message.content[2].input == READ.input
        assert message.stop_reason == "tool_use"
        assert message.usage.cache_read_input_tokens == 3
        async with _openai_client(server) as client:
            completion = await client.chat.completions.create(model="m", messages=USER)
        choice = completion.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content == "hi"
        call = (choice.message.tool_calls or [])[0]
        assert call.type == "function"
        assert (call.id, call.function.name) == ("t1", "Read")
        assert json.loads(call.function.arguments) == READ.input

    reply = Reply(text="hi", thinking="hmm", tool_calls=(READ,), cache_read_tokens=3)
    with LoopbackModelServer([reply, reply]) as server:
        asyncio.run(run(server))


# Faults: HTTP errors, broken streams and broken connections.


async def _anthropic_call(server: LoopbackModelServer, **options: Any) -> None:
    async with (
        _anthropic_client(server, **options) as client,
        client.messages.stream(model="m", max_tokens=100, messages=USER) as stream,
    ):
        await stream.get_final_message()


async def _openai_call(server: LoopbackModelServer, **options: Any) -> None:
    async with _openai_client(server, **options) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        async for _ in stream:
            pass


CALLERS = {"anthropic": _anthropic_call, "openai": _openai_call}


def _failure(provider: str, steps: list[Step], **options: Any) -> Exception:
    with LoopbackModelServer(steps) as server:
        try:
            asyncio.run(CALLERS[provider](server, **options))
        except Exception as error:
            return error
    raise AssertionError(f"{provider} call did not fail")


@pytest.mark.parametrize(
    ("provider", "headers", "expected"),
    [
        ("anthropic", {"retry-after": "1"}, anthropic.RateLimitError),
        ("openai", {"retry-after-ms": "20"}, openai.RateLimitError),
    ],
)
def test_429_raises_rate_limit_error_with_retry_after_header(
    provider: str, headers: dict[str, str], expected: type[Exception]
) -> None:
    error = _failure(provider, [Fault(status=429, headers=headers)])
    assert type(error) is expected
    assert error.status_code == 429  # type: ignore[attr-defined]
    name, value = next(iter(headers.items()))
    assert error.response.headers[name] == value  # type: ignore[attr-defined]
    assert error.response.headers["request-id"].startswith("req_")  # type: ignore[attr-defined]


CUT = CutStream(reply=Reply(text="Hello there"), after_events=4)
MID_STREAM_ERROR = StreamError(reply=Reply(text="Hello there"), after_events=4)


# What each SDK raises for a broken response; aimon's LLM clients must map every one.
@pytest.mark.parametrize(
    ("provider", "step", "expected"),
    [
        ("anthropic", Fault(status=529), anthropic.OverloadedError),
        ("openai", Fault(status=529), openai.InternalServerError),
        ("anthropic", CUT, httpx2.RemoteProtocolError),  # not wrapped in an anthropic error
        ("openai", CUT, openai.APIConnectionError),
        ("anthropic", MID_STREAM_ERROR, anthropic.APIStatusError),
        ("openai", MID_STREAM_ERROR, openai.APIError),
        ("anthropic", ResetConnection(), anthropic.APIConnectionError),
        ("openai", ResetConnection(), openai.APIConnectionError),
    ],
)
def test_broken_responses_raise(provider: str, step: Step, expected: type[Exception]) -> None:
    assert type(_failure(provider, [step])) is expected


def test_error_details_reach_the_sdk_errors() -> None:
    overloaded: Any = _failure("anthropic", [Fault(status=529)])
    assert isinstance(overloaded, anthropic.InternalServerError)
    assert overloaded.type == "overloaded_error"
    mid_stream: Any = _failure("anthropic", [MID_STREAM_ERROR])
    assert (mid_stream.status_code, mid_stream.type) == (200, "overloaded_error")
    assert _failure("openai", [MID_STREAM_ERROR]).type == "server_error"  # type: ignore[attr-defined]
    assert "incomplete chunked read" in str(_failure("anthropic", [CUT]))
    quota: Any = _failure("openai", [Fault(status=429, error_type="insufficient_quota")])
    assert (type(quota), quota.code) == (openai.RateLimitError, "insufficient_quota")
    auth: Any = _failure("anthropic", [Fault(status=401, message="bad key")])
    assert type(auth) is anthropic.AuthenticationError
    assert (auth.type, auth.api_message) == ("authentication_error", "bad key")


# Anthropic: message_start, ping, content_block_start, text_delta; OpenAI: role, content.
@pytest.mark.parametrize(("provider", "after_events"), [("anthropic", 4), ("openai", 2)])
def test_graceful_cut_stream_ends_silently_without_a_stop(provider: str, after_events: int) -> None:
    cut = CutStream(reply=Reply(text="Hello there"), after_events=after_events, graceful=True)
    outcome = _stream(provider, [cut])
    assert outcome.stop is None  # no message_stop / finish_reason: the only sign of the cut
    assert outcome.text == "Hello"


@pytest.mark.parametrize(
    ("path", "final"),
    [("/v1/messages", b"event: message_stop"), ("/v1/chat/completions", b"[DONE]")],
)
def test_cut_stream_never_sends_the_final_event(path: str, final: bytes) -> None:
    cut = CutStream(reply=Reply(text="ab"), after_events=99, graceful=True)
    with LoopbackModelServer([cut, Reply(text="ab")]) as server:
        bodies = [_post(server, path, {"model": "m", "stream": True}) for _ in range(2)]
    assert final not in bodies[0]
    assert bodies[0].count(b"data: ") == bodies[1].count(b"data: ") - 1


def _post(server: LoopbackModelServer, path: str, body: dict[str, Any]) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        return connection.getresponse().read()
    finally:
        connection.close()


def test_stalled_stream_trips_the_read_timeout() -> None:
    stall = StallStream(reply=Reply(text="Hello"), after_events=3, seconds=30)
    assert type(_failure("anthropic", [stall], timeout=0.2)) is httpx2.ReadTimeout
    assert type(_failure("openai", [stall], timeout=0.2)) is openai.APITimeoutError


def test_stalled_stream_resumes_after_the_pause() -> None:
    stall = StallStream(reply=Reply(text="Hello"), after_events=3, seconds=0.05)
    assert _stream("openai", [stall]).text == "Hello"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_exhausted_script_answers_500_once_and_is_not_retried(provider: str) -> None:
    with LoopbackModelServer([]) as server:
        try:
            asyncio.run(CALLERS[provider](server, max_retries=3))
        except Exception as caught:
            error: Any = caught
    assert len(server.requests) == 1  # x-should-retry: false stopped the SDK's retries
    module: Any = anthropic if provider == "anthropic" else openai
    assert type(error) is module.InternalServerError
    assert error.status_code == 500
    assert "loopback script exhausted: unexpected extra request" in str(error)
    assert error.response.headers["x-should-retry"] == "false"


def test_non_streamed_cut_and_stream_error() -> None:
    async def run(server: LoopbackModelServer) -> None:
        async with _openai_client(server) as client:
            with pytest.raises(openai.APIConnectionError):
                await client.chat.completions.create(model="m", messages=USER)
        async with _anthropic_client(server) as client:
            with pytest.raises(anthropic.OverloadedError):
                await client.messages.create(model="m", max_tokens=9, messages=USER)

    steps: list[Step] = [
        CutStream(reply=Reply(text="x" * 50), after_events=1),
        StreamError(reply=Reply(text="x"), after_events=1),
    ]
    with LoopbackModelServer(steps) as server:
        asyncio.run(run(server))
    assert server.remaining == 0


# Recording, scripting and serving.


def test_requests_are_recorded_in_order_with_headers_and_body() -> None:
    async def run(server: LoopbackModelServer) -> None:
        await _anthropic_call(server)
        await _openai_call(server)

    with LoopbackModelServer([Reply(text="a"), Reply(text="b"), Reply(text="c")]) as server:
        asyncio.run(run(server))
        assert server.remaining == 1
    first, second = server.requests
    assert (first.provider, first.path) == ("anthropic", "/v1/messages")
    # anthropic 2.14 sends the key as a bearer token, not x-api-key.
    assert first.headers["authorization"] == "Bearer test"
    assert first.headers["anthropic-version"]
    assert first.body["messages"] == USER
    assert first.body["stream"] is True
    assert (second.provider, second.path) == ("openai", "/v1/chat/completions")
    assert second.headers["authorization"] == "Bearer test"
    assert second.body["model"] == "m"


def test_responder_decides_from_the_request_and_handles_concurrent_calls() -> None:
    def respond(request: RecordedRequest) -> Step:
        return Reply(text=f"you said {request.body['messages'][0]['content']}")

    async def ask(server: LoopbackModelServer, word: str) -> str:
        async with _openai_client(server) as client:
            completion = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": word}]
            )
        return completion.choices[0].message.content or ""

    async def run(server: LoopbackModelServer) -> list[str]:
        return await asyncio.gather(*(ask(server, str(n)) for n in range(8)))

    with LoopbackModelServer(respond) as server:
        assert asyncio.run(run(server)) == [f"you said {n}" for n in range(8)]
    assert len(server.requests) == 8


def test_add_extends_the_script() -> None:
    with LoopbackModelServer() as server:
        server.add(Reply(text="late"), Reply(text="later"))
        assert server.remaining == 2
        assert asyncio.run(_anthropic_stream(server)).text == "late"
        assert server.remaining == 1


def test_provider_restriction_and_probe_endpoints() -> None:
    with LoopbackModelServer([Reply(text="x")], provider="anthropic") as server:
        for path in ("/api/tags", "/v1/models"):
            with urllib.request.urlopen(server.base_url + path, timeout=5) as response:
                assert response.status == 200
                json.loads(response.read())
        with pytest.raises(openai.NotFoundError):
            asyncio.run(_openai_call(server))
        assert server.remaining == 1
    assert [r.provider for r in server.requests] == ["probe", "probe", "openai"]


def test_paths_without_v1_are_served() -> None:
    async def run(server: LoopbackModelServer) -> None:
        async with openai.AsyncOpenAI(
            api_key="test", base_url=server.base_url, max_retries=0
        ) as client:
            completion = await client.chat.completions.create(model="m", messages=USER)
        assert completion.choices[0].message.content == "plain"

    with LoopbackModelServer([Reply(text="plain")]) as server:
        asyncio.run(run(server))
    assert server.requests[0].path == "/chat/completions"


def test_loads_script_reads_every_step_kind() -> None:
    script = loads_script(
        [
            {"text": "hi", "thinking": "t", "output_tokens": 7},
            {"tool_calls": [{"name": "Read", "input": {"path": "a"}, "id": "x"}]},
            {"tool_calls": [{"name": "Bad", "raw_arguments": "{oops"}], "stop": "end"},
            {"fault": 429, "headers": {"retry-after": "1"}, "error_type": "rate_limit_error"},
            {"cut": 3, "text": "partial"},
            {"cut": 2, "text": "partial", "graceful": True},
            {"stall": 2, "seconds": 0.5, "text": "slow"},
            {"stream_error": 4, "text": "boom"},
            {"reset": True},
        ]
    )
    assert script == [
        Reply(text="hi", thinking="t", output_tokens=7),
        Reply(tool_calls=(ScriptedToolCall(name="Read", input={"path": "a"}, id="x"),)),
        Reply(
            tool_calls=(ScriptedToolCall(name="Bad", input={}, raw_arguments="{oops"),),
            stop="end",
        ),
        Fault(status=429, headers={"retry-after": "1"}, error_type="rate_limit_error"),
        CutStream(reply=Reply(text="partial"), after_events=3),
        CutStream(reply=Reply(text="partial"), after_events=2, graceful=True),
        StallStream(reply=Reply(text="slow"), after_events=2, seconds=0.5),
        StreamError(reply=Reply(text="boom"), after_events=4),
        ResetConnection(),
    ]


@pytest.mark.parametrize(
    "bad",
    [{"txt": "typo"}, [{"fault": 500, "text": "x"}], [{"stop": "done"}], [[1]], "hello"],
)
def test_loads_script_rejects_malformed_steps(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"unknown|script|stop"):
        loads_script(bad if isinstance(bad, list) else [bad] if isinstance(bad, dict) else bad)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_echo_tools_calls_glob_until_enough_results_then_says_done(provider: str) -> None:
    responder = loads_script({"echo_tools": 2})
    assert callable(responder)

    async def run(server: LoopbackModelServer) -> list[str]:
        seen: list[str] = []
        if provider == "anthropic":
            messages: list[Any] = list(USER)
            async with _anthropic_client(server) as client:
                while True:
                    m = await client.messages.create(model="m", max_tokens=9, messages=messages)
                    seen.append(m.stop_reason or "")
                    if m.stop_reason != "tool_use":
                        return [*seen, m.content[0].text]  # type: ignore[union-attr]
                    call = m.content[0]
                    assert (call.name, call.input) == ("Glob", {"pattern": "*.md"})  # type: ignore[union-attr]
                    result = {"type": "tool_result", "tool_use_id": call.id, "content": "a.md"}  # type: ignore[union-attr]
                    messages += [m.to_param(), {"role": "user", "content": [result]}]
        async with _openai_client(server) as client:
            history: list[Any] = list(USER)
            while True:
                c = await client.chat.completions.create(model="m", messages=history)
                choice = c.choices[0]
                seen.append(choice.finish_reason)
                if choice.finish_reason != "tool_calls":
                    return [*seen, choice.message.content or ""]
                call_id = (choice.message.tool_calls or [])[0].id
                history += [
                    choice.message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call_id, "content": "a.md"},
                ]

    with LoopbackModelServer(responder) as server:
        seen = asyncio.run(run(server))
    stop, end = ("tool_use", "end_turn") if provider == "anthropic" else ("tool_calls", "stop")
    assert seen == [stop, stop, end, "done"]


def test_serve_cli_prints_ready_and_answers(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the cli"}, {"fault": 429}]), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "aimon_core.testing", "serve", "--port", "0", "--script", script],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": ""},
    )
    try:
        assert process.stdout is not None
        ready, base_url = process.stdout.readline().split()
        assert ready == "READY"
        assert base_url.startswith("http://127.0.0.1:")
        server_url = base_url

        async def run() -> None:
            async with anthropic.AsyncAnthropic(
                api_key="test", base_url=server_url, max_retries=0
            ) as client:
                message = await client.messages.create(model="m", max_tokens=9, messages=USER)
                assert message.content[0].text == "from the cli"  # type: ignore[union-attr]
                with pytest.raises(anthropic.RateLimitError):
                    await client.messages.create(model="m", max_tokens=9, messages=USER)

        asyncio.run(run())
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        process.stdout.close()  # type: ignore[union-attr]


def test_importing_the_server_loads_no_sdk() -> None:
    code = (
        "import sys, aimon_core.testing, aimon_core.testing.__main__;"
        "heavy = {'anthropic', 'openai', 'httpx2', 'httpx', 'pydantic'} & set(sys.modules);"
        "print(sorted(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": ""},
    )
    assert result.stdout.strip() == "[]"


def test_stop_is_prompt_even_with_a_stalled_stream_and_idle_keep_alive() -> None:
    server = LoopbackModelServer([StallStream(reply=Reply(text="x"), after_events=1, seconds=60)])
    server.start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    body = json.dumps({"model": "m", "stream": True, "messages": USER})
    connection.request("POST", "/v1/messages", body, {"content-type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200
    assert response.readline().startswith(b"event: message_start")
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < 2
    connection.close()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.port


def test_recorded_requests_give_their_tool_results_in_both_wire_formats() -> None:
    from aimon_core.testing import RecordedRequest

    anthropic = RecordedRequest(provider="anthropic", path="/v1/messages", headers={}, body={
        "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "one"},
            {"type": "tool_result", "tool_use_id": "b",
             "content": [{"type": "text", "text": "tw"}, {"type": "text", "text": "o"}]}]}]})
    openai = RecordedRequest(provider="openai", path="/v1/chat/completions", headers={}, body={
        "messages": [{"role": "user", "content": "go"},
                     {"role": "tool", "tool_call_id": "c", "content": "three"}]})
    assert anthropic.tool_results() == {"a": "one", "b": "two"}
    assert openai.tool_results() == {"c": "three"}


def test_recorded_requests_give_each_results_error_flag_in_both_wire_formats() -> None:
    anthropic = RecordedRequest(provider="anthropic", path="/v1/messages", headers={}, body={
        "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "b", "content": "bad", "is_error": True}]}]})
    openai = RecordedRequest(provider="openai", path="/v1/chat/completions", headers={}, body={
        "messages": [{"role": "tool", "tool_call_id": "c", "content": "ok"},
                     {"role": "tool", "tool_call_id": "d", "content": "Error: bad"}]})
    assert anthropic.tool_outcomes() == {"a": (False, "ok"), "b": (True, "bad")}
    assert openai.tool_outcomes() == {"c": (False, "ok"), "d": (True, "bad")}
    assert openai.tool_results()["d"] == "Error: bad"  # as sent


def test_recorded_requests_read_the_same_in_both_wire_formats() -> None:
    anthropic = RecordedRequest(provider="anthropic", path="/v1/messages", headers={}, body={
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "Read", "input_schema": {}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                     {"role": "assistant", "content": "hello"}]})
    openai = RecordedRequest(provider="openai", path="/v1/chat/completions", headers={}, body={
        "tools": [{"type": "function", "function": {"name": "Read", "parameters": {}}}],
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "hi"},
                     {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]})
    for request in (anthropic, openai):
        assert request.system_text() == "Be brief."
        assert request.tool_names() == ["Read"]
        assert request.conversation() == [("user", "hi"), ("assistant", "hello")]


def test_a_released_stall_waits_for_the_test_not_the_clock() -> None:
    stall = StallStream(reply=Reply(text="Hello"), after_events=3, seconds=60, released=True)
    with LoopbackModelServer([stall]) as server:
        body: list[bytes] = []
        reader = threading.Thread(target=lambda: body.append(
            _post(server, "/v1/messages", {"model": "m", "stream": True})))
        reader.start()
        server.release()
        reader.join(timeout=10)
    assert body and b"message_stop" in body[0]
