"""Script entries for the local OpenAI server that behave like llama-cpp-python 0.3.x's server with a small model.

What the *server* does follows llama-cpp-python's source (llama_cpp/llama_chat_format.py, 0.3.x):

- `--chat_format chatml-function-calling` (`chatml_function_calling`): with no `tool_choice` (or "none") the
  prompt is rendered with `tools=[]`, so the model never sees the tools; a `tool_choice` naming a function forces
  that call (grammar); "auto" lets the model choose between "message:" and "functions.<name>:" (native
  tool_calls); any other string fails `assert tool_choice == "auto"`, which the server answers with HTTP 500 and
  an empty message (llama_cpp/server/errors.py). Its template renders system, user and assistant messages only:
  `role: tool` results never reach the model.
- No `--chat_format`, a GGUF with its own chat template (`Jinja2ChatFormatter`): the template gets `tools` and
  renders them (Qwen2.5's lists them in <tools> and asks for <tool_call> blocks) and renders `role: tool` as
  <tool_response>; the server does not parse the reply, so calls arrive as text in `content`. A string
  `tool_choice` is ignored.

What the *model* writes is a simulation of a small instruct model: it calls `query_logs` first, then submits a
draft citing the result it saw; asked for a word from a tool result, it answers it when it saw it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

CHATML_FUNCTION_CALLING = "chatml-function-calling"
GGUF_TEMPLATE = "gguf-template"
LOGS_CALL = {"service": "order-service", "query": "Connection is not available", "level": "ERROR"}


def llama_cpp(handler: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A script entry answering one request as llama-cpp-python's server would with this chat handler."""

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        tools = request.get("tools") or []
        choice = request.get("tool_choice")
        if handler == CHATML_FUNCTION_CALLING:
            if tools and isinstance(choice, str) and choice not in ("none", "auto"):
                return {"status": 500, "body": {"error": {"message": "", "type": "internal_server_error"}}}
            sees_tools = bool(tools) and choice not in (None, "none")
            visible = [m for m in request["messages"] if m["role"] in ("system", "user", "assistant")]
            return _model(visible, tools if sees_tools else [], native=True)
        return _model(request["messages"], tools, native=False)

    return answer


def _model(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, native: bool) -> dict[str, Any]:
    """The simulated model's reply to the messages it was shown, with the tools it was shown."""
    last = str(messages[-1].get("content") or "")
    results = [m for m in messages if m["role"] == "tool"]
    if not tools:
        if "JSON" in last and "verdict" not in last:
            return {"content": '{"ok": true}'}
        if '"snapshot"' in last:  # the reviewer's input
            return {"content": '{"verdict": "SUPPORTED", "reason": "the cited log lines show the pool errors"}'}
        if "Repeat exactly" in last:
            return {"content": last.split(": ", 1)[-1]}
        return {"content": "I would look at the order-service logs first."}
    names = [t["function"]["name"] for t in tools]
    if last.startswith("What ") and results:  # the probe asks what a tool result said
        word = re.search(r"ZEBRA-[0-9A-F]+", " ".join(str(m["content"]) for m in results))
        return {"content": word.group(0) if word else "I do not know."}
    if not results:
        name, arguments = ("query_logs", LOGS_CALL) if "query_logs" in names else (names[0], {"token": "x"})
    else:
        name, arguments = "submit_diagnosis_draft", _draft([str(m["tool_call_id"]) for m in results])
    if native:
        return {"tool_calls": [{"id": f"call_{len(results)}", "name": name, "arguments": arguments}]}
    return {"content": "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"}


def _draft(ids: list[str]) -> dict[str, Any]:
    return {"conclusion": None,
            "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": ids,
                          "text": "order-service logged HikariPool connection-not-available errors"}],
            "action_plan": [], "recommendations": [],
            "limitations": {"scope": "order-service ERROR logs", "missing_info": []}}
