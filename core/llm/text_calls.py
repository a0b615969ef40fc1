"""Tool calls written as text (SPEC §11 wire formats): endpoints without native function calling, or models that
ignore it, write the call in the message content. This module finds such calls, and only such calls:

- `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (Hermes, Qwen2.5; the closing tag may be cut
  off at the end of the content by a stop token);
- `[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]` and `[TOOL_CALLS]name[ARGS]{...}` (Mistral);
- `<|python_tag|>` followed by a call object (Llama 3.x);
- a call object `{"name": ..., "arguments"|"parameters": {...}}` (Llama 3.x writes `parameters`), a list of them,
  or the OpenAI shape `{"type": "function", "function": {...}}`, standing on lines of their own or in a ```json
  fence.

What is *not* a call: anything inside a line of other text (a quoted log line the model repeats), and anything
whose text is already in the data the model was given (a tool result or the question: echoed data, SPEC §5 "tool
text is data"). What is found is returned for the caller to validate exactly like native calls (known tool,
schema-valid arguments, else the corrective turn); nothing here executes or trusts a name. Bounded: content over
MAX_TEXT_CHARS is not read, at most MAX_CANDIDATES places are decoded, at most MAX_CALLS calls are returned.

One more shape, read only when the content holds no call at all (`implied_submit`): the *arguments* of a submit
function written without its name, e.g. a bare DiagnosisDraft object (small models do this). It is read as that
function's call when it stands on lines of its own (or in a fence), is the only such object, its keys are among
the function's parameters and name at least half of them (a model may leave out an empty list), and exactly one
offered submit function fits; echoes are left out as above. The arguments are then validated like any call's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.llm.model import ModelToolCall

MAX_TEXT_CHARS = 128 * 1024
"""A draft at its schema caps is under 64 KiB of JSON; content longer than this is not searched for calls."""
MAX_CANDIDATES = 32
MAX_CALLS = 16
MAX_NAME_CHARS = 128
SUBMIT_PREFIX = "submit_"
"""A stage's ending function (SPEC §11: submit_diagnosis_draft, submit_knowledge_answer): the only ones whose
arguments may be written without the name."""

_TAG_OPEN = re.compile(r"^[ \t]*<tool_call>", re.MULTILINE)
_TAG_CLOSE = re.compile(r"\s*</tool_call>[ \t]*(?:\n|$)")
_MISTRAL = re.compile(r"^[ \t]*\[TOOL_CALLS\][ \t]*", re.MULTILINE)
_MISTRAL_NAMED = re.compile(r"([A-Za-z_][\w.-]{0,127})\[ARGS\]")
_PYTHON_TAG = re.compile(r"^[ \t]*<\|python_tag\|>[ \t]*", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:json|JSON|tool_call|tool_code)?[ \t]*\n(?P<body>.*?)\n[ \t]*```[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_LINE_START_JSON = re.compile(r"^[ \t]*(?=[{\[])", re.MULTILINE)
_SPACE = re.compile(r"\s+")
_DECODER = json.JSONDecoder()


@dataclass
class TextCalls:
    """What the content held: the calls (validated later, like native ones), their format, and echoes left out."""

    calls: list[ModelToolCall] = field(default_factory=list)
    format: str | None = None
    echoed: int = 0
    """Call-shaped texts that were left out because they repeat the data the model was given."""
    remainder: str = ""
    """The content without the calls' text (the prose around them), for the conversation history."""
    too_long: bool = False


@dataclass
class _Found:
    start: int
    end: int
    value: Any
    format: str
    raw: str


def calls_in_text(content: str | None, data_texts: Iterable[str] = ()) -> TextCalls:
    """The tool calls written in `content`; `data_texts` are the texts the model was given as data (tool results,
    the question), whose call-shaped parts are echoes, never calls."""
    if not content or not content.strip():
        return TextCalls()
    if len(content) > MAX_TEXT_CHARS:
        return TextCalls(too_long=True, remainder=content[:200])
    found = _find(content)
    if not found:
        return TextCalls(remainder=content)
    data = _compact("\n".join(data_texts)) if found else ""
    result = TextCalls()
    spans: list[tuple[int, int]] = []
    for item in found:
        calls = _as_calls(item.value)
        if not calls:
            continue
        spans.append((item.start, item.end))
        if data and _compact(item.raw) in data:
            result.echoed += len(calls)
            continue
        result.calls.extend(calls[: MAX_CALLS - len(result.calls)])
        result.format = result.format or item.format
        if len(result.calls) >= MAX_CALLS:
            break
    result.remainder = _without(content, spans).strip()
    return result


def implied_submit(content: str | None, tools: Sequence[dict[str, Any]], data_texts: Iterable[str] = ()) -> TextCalls:
    """The call of the one offered submit function whose arguments `content` writes without a name, if any (see the
    module docstring); `tools` are the OpenAI tool schemas offered to the call."""
    if not content or not content.strip() or len(content) > MAX_TEXT_CHARS:
        return TextCalls()
    budget = [MAX_CANDIDATES]
    found = [f for f in (_fenced(content, budget) or _objects(content, budget)) if isinstance(f.value, dict)]
    if len(found) != 1:
        return TextCalls()
    item = found[0]
    names = [name for name, schema in _submit_schemas(tools) if _fits(item.value, schema)]
    if len(names) != 1:
        return TextCalls()
    if _compact(item.raw) in _compact("\n".join(data_texts)):
        return TextCalls(echoed=1, remainder=content)
    call = ModelToolCall(id=None, name=names[0], arguments=json.dumps(item.value, ensure_ascii=False))
    return TextCalls(calls=[call], format="implied_submit", remainder=_without(content, [(item.start, item.end)]).strip())


def _submit_schemas(tools: Sequence[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        name, schema = function.get("name"), function.get("parameters")
        if isinstance(name, str) and name.startswith(SUBMIT_PREFIX) and isinstance(schema, dict):
            yield name, schema


def _fits(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    """The object's keys are parameters of the schema and name at least half of them (at least one)."""
    properties = schema.get("properties")
    if not value or not isinstance(properties, dict):
        return False
    return all(key in properties for key in value) and 2 * len(value) >= len(properties)


def _objects(content: str, budget: list[int], keep: Callable[[Any], bool] = lambda value: True) -> list[_Found]:
    """JSON values standing on lines of their own that `keep` accepts (any shape by default)."""
    found = []
    position = 0
    for match in _LINE_START_JSON.finditer(content):
        if match.end() < position:
            continue  # inside an object found already
        item = _decode_at(content, match.end(), "json", match.start(), budget)
        if item is not None and _line_ends(content, item.end) and keep(item.value):
            found.append(item)
            position = item.end
    return found


def data_texts(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The texts a conversation gave the model as data: user turns (the question, first-look evidence) and tool
    results, with the JSON string escapes of tool results undone so a repeated log line reads as it was logged."""
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") not in ("user", "tool") or not isinstance(content, str):
            continue
        texts.append(content)
        if "\\" in content:
            texts.extend(_strings_in(content))
    return texts


def _strings_in(text: str) -> Iterator[str]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _find(content: str) -> list[_Found]:
    """Call-shaped JSON at the places a call may stand, in order of position, non-overlapping."""
    found: list[_Found] = []
    budget = [MAX_CANDIDATES]
    for match in _TAG_OPEN.finditer(content):
        item = _decode_at(content, match.end(), "tool_call_tag", match.start(), budget)
        if item is not None:
            close = _TAG_CLOSE.match(content, item.end)
            if close is not None:
                item.end = close.end()
            elif content[item.end:].strip():
                continue  # text after the object on the same block: not a well-formed block
            found.append(item)
    for match in _MISTRAL.finditer(content):
        found.extend(_mistral(content, match, budget))
    for match in _PYTHON_TAG.finditer(content):
        item = _decode_at(content, match.end(), "python_tag", match.start(), budget)
        if item is not None and _line_ends(content, item.end):
            found.append(item)
    if not found:
        found = _fenced(content, budget) or _bare(content, budget)
    found.sort(key=lambda f: f.start)
    return _non_overlapping(found)


def _mistral(content: str, match: re.Match[str], budget: list[int]) -> list[_Found]:
    named = _MISTRAL_NAMED.match(content, match.end())
    if named is None:
        item = _decode_at(content, match.end(), "mistral", match.start(), budget)
        return [item] if item is not None and _line_ends(content, item.end) else []
    item = _decode_at(content, named.end(), "mistral", match.start(), budget)
    if item is None or not isinstance(item.value, dict) or not _line_ends(content, item.end):
        return []
    item.value = {"name": named.group(1), "arguments": item.value}
    return [item]


def _fenced(content: str, budget: list[int]) -> list[_Found]:
    found = []
    for match in _FENCE.finditer(content):
        body = match.group("body")
        offset = match.start("body") + (len(body) - len(body.lstrip()))
        item = _decode_at(content, offset, "json_fence", match.start(), budget)
        if item is not None and not content[item.end:match.end("body")].strip():
            item.end = match.end()
            found.append(item)
    return found


def _bare(content: str, budget: list[int]) -> list[_Found]:
    """Call objects standing on lines of their own (the whole content, or lines between prose)."""
    return _objects(content, budget, lambda value: bool(_as_calls(value)))


def _decode_at(content: str, index: int, fmt: str, start: int, budget: list[int]) -> _Found | None:
    """The JSON value starting at `index` (whitespace skipped), within the candidate budget."""
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    while index < len(content) and content[index] in " \t\r\n":
        index += 1
    if index >= len(content) or content[index] not in "{[":
        return None
    try:
        value, end = _DECODER.raw_decode(content, index)
    except (ValueError, RecursionError):
        return None
    return _Found(start=start, end=end, value=value, format=fmt, raw=content[index:end])


def _line_ends(content: str, index: int) -> bool:
    """Nothing but blanks from index to the end of its line."""
    newline = content.find("\n", index)
    rest = content[index:] if newline < 0 else content[index:newline]
    return not rest.strip()


def _non_overlapping(found: list[_Found]) -> list[_Found]:
    kept: list[_Found] = []
    for item in found:
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


def _as_calls(value: Any) -> list[ModelToolCall]:
    """The calls a decoded value is: one call object, a list of call objects, or {"tool_calls": [...]}."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item) for item in items]
    if not calls or any(c is None for c in calls):
        return []
    return [c for c in calls if c is not None]


def _as_call(item: Any) -> ModelToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # the OpenAI wire shape, written out as text
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        return None
    key = "arguments" if "arguments" in item else "parameters" if "parameters" in item else None
    if key is None:
        return None
    arguments = item[key]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ModelToolCall(id=None, name=name.strip(), arguments=text)


def _compact(text: str) -> str:
    """Text without blanks and backslashes: a repeated span matches whatever its spacing or JSON escaping."""
    return _SPACE.sub("", text).replace("\\", "")


def _without(content: str, spans: list[tuple[int, int]]) -> str:
    parts, position = [], 0
    for start, end in spans:
        parts.append(content[position:start])
        position = end
    parts.append(content[position:])
    return "".join(parts)
