"""Tool text is data (SPEC §5): spans of tool output that address the model are marked in the projection.

A span starts where a log line, runbook or SQL value speaks to an AI (an "ignore previous instructions", a note to
the assistant, a chat role marker) and runs to the end of its paragraph (bounded). It is wrapped as
`⟦untrusted tool text: ...⟧`, so the agent reads it as a quotation and the EvidenceGuard can refuse a draft that
reproduces it (TOOL_TEXT_AS_INSTRUCTION). The brackets are ours alone: any found in tool text are replaced first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

OPEN = "⟦untrusted tool text: "
CLOSE = "⟧"
SPAN_MAX_CHARS = 400

_WHO = r"(?:ai|a\.i\.|assistant|llm|language\s+model|model|agent|bot|chat\s?bot|gpt|chatgpt|claude|copilot|gemini)"
_TRIGGERS = (
    # Addressed to the model: "SYSTEM NOTE TO AI:", "message for the assistant", "attention LLM".
    rf"\b(?:system\s+)?(?:note|notes|message|instructions?|directive|command|reminder|attention|hint|request|warning)"
    rf"\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_WHO}s?\b",
    rf"\b(?:dear|hey|hello|attention|note\s+to)\s+(?:the\s+)?{_WHO}\b",
    rf"\b(?:if|when)\s+you\s+are\s+(?:an?\s+)?(?:ai|{_WHO})\b",
    rf"\bas\s+an?\s+(?:ai|{_WHO})\b[^.\n]{{0,40}}\byou\b",
    rf"(?:^|(?<=[:.;|>\]]\s))\W{{0,6}}{_WHO}\s*[:,]\s*(?:please\s+)?(?:conclude|ignore|disregard|recommend|say|report|tell|answer|respond"
    r"|state|output|write|run|execute|forget|pretend|act|do|mark|treat|classify|approve|return)\b",
    # Overrides of the model's instructions.
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|of\s+|these\s+|those\s+){0,3}"
    r"(?:previous|prior|above|earlier|preceding|original|system|safety|your|my)\s+"
    r"(?:instructions?|prompts?|messages?|rules|directions|guidelines|guardrails|context|checks)\b",
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:the\s+)?(?:above|previous|prior)\b",
    r"\bnew\s+(?:system\s+)?instructions?\s*:",
    r"\byou\s+(?:are\s+now|must\s+now|will\s+now|should\s+now)\b",
    r"\bfrom\s+now\s+on,?\s+(?:you|the\s+assistant)\b",
    r"\b(?:system|developer)\s+(?:prompt|message|override|instruction)s?\b",
    r"\bdo\s+not\s+(?:tell|inform|mention\s+(?:this\s+)?to)\s+the\s+(?:user|human|operator)\b",
    # Chat role markers and special tokens of chat templates.
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>",
    r"\[/?INST\]|<</?SYS>>|</?(?:system|assistant|instructions?|user)>",
    r"(?:^|(?<=[:.;|>\]]\s))\W{0,6}(?:###\s*)?(?:system|assistant|developer|human)\s*:",
)
_TRIGGER_RE = re.compile("|".join(f"(?:{t})" for t in _TRIGGERS), re.IGNORECASE | re.MULTILINE)
# Cheap test first: every trigger needs one of these (lower case) to occur.
_PREFILTER_RE = re.compile(
    r"ai|a\.i|assistant|llm|model|agent|bot|gpt|claude|copilot|gemini|ignore|disregard|forget|override|bypass"
    r"|instruction|you|system|developer|<\||inst\]|<<sys|human|do not"
)
_SPAN_END_RE = re.compile(r"\n\s*\n")
_MARKED_RE = re.compile(re.escape(OPEN) + r"([^" + CLOSE + r"]*)(?:" + CLOSE + r"|$)")


def _neutralise(text: str) -> str:
    """Our span brackets may not come from tool text (a forged CLOSE would cut a span short)."""
    return text.replace(OPEN.strip(), "[untrusted tool text]").replace("⟦", "[").replace(CLOSE, "]")


def mark_instructions(text: str) -> str:
    """The text with each instruction-like span wrapped in ⟦untrusted tool text: ...⟧ (other text unchanged)."""
    if not text:
        return text
    lowered = text.lower()
    if "⟦" not in text and CLOSE not in text and _PREFILTER_RE.search(lowered) is None:
        return text
    text = _neutralise(text)
    parts: list[str] = []
    cursor = 0
    for match in _TRIGGER_RE.finditer(text):
        if match.start() < cursor:
            continue  # inside the span already marked
        start = match.start()
        paragraph = _SPAN_END_RE.search(text, match.end())
        end = min(paragraph.start() if paragraph else len(text), start + SPAN_MAX_CHARS)
        end = max(end, match.end())
        parts += [text[cursor:start], OPEN, text[start:end], CLOSE]
        cursor = end
    if not parts:
        return text
    parts.append(text[cursor:])
    return "".join(parts)


def marked_spans(text: str) -> list[str]:
    """The marked spans of a projection text (an unterminated one, cut by a size cap, runs to the end)."""
    if OPEN not in text:
        return []
    return [m.group(1) for m in _MARKED_RE.finditer(text) if m.group(1).strip()]


_OPEN_BYTES = OPEN.encode()


def may_hold_spans(value: Any) -> bool:
    """False only when no string in `value` holds a marked span, so spans_in would yield nothing: one orjson write
    of the value instead of a Python step per node (a first look's six projections: 15-19 against 123-138 us of
    CPU). orjson writes every string of a dict, list or tuple (subclasses included) as its UTF-8 with only quotes,
    backslashes and control characters escaped, none of which OPEN holds, so a span's opening is in its bytes
    whenever it is in a string spans_in visits; a value orjson refuses (a lone surrogate, an integer over 64 bits, a
    non-str key) answers True and is walked as before."""
    try:
        return _OPEN_BYTES in orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return True


def spans_in(value: Any) -> Iterator[str]:
    """Every marked span in a projection (all of its strings, at any depth), in depth-first document order.

    Iterative, with an explicit stack of the values still to visit (children pushed in reverse, so they pop in
    order): the guard walks every string of every projection, and a recursive generator cost one generator frame
    per node.
    """
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if OPEN in item:
                yield from marked_spans(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
