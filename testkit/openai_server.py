"""A local OpenAI-compatible server (POST /v1/chat/completions, GET /v1/models) answering from a script.

Used by tests (never a real provider) and by the offline demo, which serves recorded responses.
Plain asyncio streams, so `core/` keeps its rule of never importing aiohttp.web.

Script format: a JSON list (or {"responses": [...]}) of entries, served in order, one per completion request.
Every entry is an object with any of:

- "content": str | null                     plain assistant content
- "tool_calls": [{"id": str | null (or omitted), "name": str,
                  "arguments": object | str}]  parallel calls; a str is sent verbatim (e.g. invalid JSON)
- "reasoning_content": str                  provider reasoning, sent as an extra message field
- "finish_reason": str                      default "tool_calls" when calls are present, else "stop"
- "status": int, "body": object, "headers": {name: value}   an HTTP error answer (e.g. 500, 429 + Retry-After)
- "delay_s": float                          wait before answering (slow answer / client timeout)
- "disconnect": true                        drop the connection without answering (transport error)
- "until": asyncio.Event                    (Python only) answer once the event is set: a test holds the run at
                                            this step until it has observed what must happen first

With strict=True the server checks every `strict: true` function schema against OpenAI's strict-mode rules
(testkit/strict.py) and answers HTTP 400 naming the first problem, as OpenAI does.

In Python an entry may also be a callable taking the request JSON and returning an entry, so a scripted
agent can cite the tool_call_ids it actually got back. When the script is exhausted the server answers
HTTP 400 "script exhausted" (not retryable), so a test that under-scripts fails loudly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

Entry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable"}


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """Read a script file: a JSON list of entries or an object with a "responses" list."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    entries = data.get("responses") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{path}: expected a list of response objects")
    return entries


def completion_body(entry: dict[str, Any], model: str, seq: int) -> dict[str, Any]:
    """Render one scripted entry as an OpenAI chat.completion object."""
    message: dict[str, Any] = {"role": "assistant", "content": entry.get("content")}
    calls = []
    for call in entry.get("tool_calls") or []:
        arguments = call.get("arguments", {})
        rendered: dict[str, Any] = {
            "type": "function",
            "function": {"name": call["name"], "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        }
        if "id" in call:
            rendered["id"] = call["id"]
        calls.append(rendered)
    if calls:
        message["tool_calls"] = calls
    if "reasoning_content" in entry:
        message["reasoning_content"] = entry["reasoning_content"]
    finish = entry.get("finish_reason") or ("tool_calls" if calls else "stop")
    return {
        "id": f"chatcmpl-fake-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class FakeOpenAIServer:
    """Serves scripted chat completions on 127.0.0.1 and records every request body."""

    def __init__(self, script: list[Entry] | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 models: list[str] | None = None, strict: bool = False) -> None:
        self._queue: deque[Entry] = deque(script or [])
        self.strict = strict
        self.host = host
        self.port = port
        self.models = models or ["fake-model"]
        self.requests: list[dict[str, Any]] = []
        """Decoded JSON bodies of every chat completion request, in order."""
        self.request_headers: list[dict[str, str]] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        """The base URL to give an OpenAI client (…/v1)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """Entries not yet served."""
        return len(self._queue)

    def push(self, *entries: Entry) -> None:
        """Append entries to the script."""
        self._queue.extend(entries)

    async def start(self) -> None:
        """Listen (port 0 picks a free port)."""
        self._server = await asyncio.start_server(self._serve_connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            while await self._serve_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        line = await reader.readline()
        if not line:
            return False
        method, target, _version = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        body = await reader.readexactly(length) if length else b""
        answer = await self._dispatch(method, target.split("?", 1)[0], body, headers)
        if answer is None:
            return False
        status, extra_headers, payload = answer
        data = json.dumps(payload).encode()
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Content-Type: application/json",
                f"Content-Length: {len(data)}", "Connection: keep-alive"]
        head += [f"{k}: {v}" for k, v in extra_headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()
        return True

    @staticmethod
    def _strict_problem(request: dict[str, Any]) -> str | None:
        return _first_strict_problem(request)

    async def _dispatch(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], dict[str, Any]] | None:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {}, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]}
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {}, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}
        try:
            request = json.loads(body or b"{}")
        except json.JSONDecodeError:
            return 400, {}, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}}
        self.requests.append(request)
        self.request_headers.append(headers)
        problem = self._strict_problem(request) if self.strict else None
        if problem is not None:
            return 400, {}, {"error": {"message": f"Invalid schema for function: {problem}", "type": "invalid_request_error"}}
        if not self._queue:
            return 400, {}, {"error": {"message": "script exhausted", "type": "invalid_request_error"}}
        entry = self._queue.popleft()
        resolved = entry(request) if callable(entry) else entry
        if resolved.get("delay_s"):
            await asyncio.sleep(float(resolved["delay_s"]))
        if isinstance(resolved.get("until"), asyncio.Event):
            await resolved["until"].wait()
        if resolved.get("disconnect"):
            return None
        if "status" in resolved and int(resolved["status"]) != 200:
            body_json = resolved.get("body") or {"error": {"message": "scripted error", "type": "server_error"}}
            return int(resolved["status"]), dict(resolved.get("headers") or {}), body_json
        body_json = completion_body(resolved, str(request.get("model", "")), len(self.requests))
        return 200, dict(resolved.get("headers") or {}), body_json


def _first_strict_problem(request: dict[str, Any]) -> str | None:
    from testkit.strict import strict_mode_problems

    for tool in request.get("tools") or []:
        function = tool.get("function", {})
        if function.get("strict"):
            problems = strict_mode_problems(function.get("parameters", {}))
            if problems:
                return f"{function.get('name')}: {problems[0]}"
    return None


async def _serve_forever(host: str, port: int, script: list[Entry]) -> None:
    async with FakeOpenAIServer(script, host=host, port=port) as server:
        print(f"fake OpenAI server on {server.base_url} with {server.remaining} scripted responses", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    """Run the server standalone: --port N --script file.json."""
    parser = argparse.ArgumentParser(description="Local OpenAI-compatible server answering from a script.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", type=Path, help="JSON file: a list of response entries (see module docstring)")
    args = parser.parse_args(argv)
    script: list[Entry] = list(load_script(args.script)) if args.script else []
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(args.host, args.port, script))


if __name__ == "__main__":
    main()
