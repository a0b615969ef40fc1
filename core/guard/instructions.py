"""TOOL_TEXT_AS_INSTRUCTION: a draft may not reproduce tool text that was marked as addressing the model (SPEC §5).

The spans come from the cited projections and from every projection the run's agent was shown (RunContext collects
them at the boundary, so an uncited call's injected text counts too). A draft text reproduces a span when both share
a run of `min_shared_words` words of which `min_content_words` are not stopwords: "recommend DROP TABLE orders" in a
runbook and "DROP TABLE orders" in an action share "drop table orders".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from core.evidence.instructions import OPEN, spans_in
from core.guard.inputs import Finding, GuardInput, dependent_items, projection_key
from core.guard.rules import ToolTextParams

_WORD = re.compile(r"[a-z0-9]+(?:[._'-][a-z0-9]+)*")
_STOPWORDS = frozenset(re.split(
    r"\s+",
    "a an the is are was were be been being to of in on at for from by with and or not no it its this that these those"
    " as if then than so do does did has have had will would should can could may might must you your we our i me my"
    " he she they them their there here all any some each every",
))
_SHOWN_CHARS = 60
_OPEN_UTF8 = OPEN.encode()
"""How the opening bracket appears in a projection_key: marshal writes every str whole, as UTF-8."""


def _runs(text: str, size: int, content: int) -> set[tuple[str, ...]]:
    """Every run of `size` consecutive words with at least `content` non-stopwords."""
    words = _WORD.findall(text.lower())
    runs = set()
    for i in range(len(words) - size + 1):
        run = tuple(words[i : i + size])
        if sum(word not in _STOPWORDS for word in run) >= content:
            runs.add(run)
    return runs


def _draft_texts(data: GuardInput) -> Iterator[tuple[str, str]]:
    for i, analysis in enumerate(data.draft.analysis):
        yield f"analysis[{i}].text", analysis.text
    for path, text, _ in dependent_items(data.draft):
        yield path, text


def _spans(data: GuardInput) -> Iterable[str]:
    yield from data.untrusted
    for cid, record in data.records.items():
        if record is not None and record.run_id == data.run_id and record.projection:
            # a projection whose marshal bytes lack the opening bracket has no string holding one, so no span:
            # one bytes search instead of a walk over every value (the key is usually built already)
            key = data.projection_keys.get(cid) if data.usable.get(cid) is record else None
            if key is None:
                key = projection_key(record.projection)
            if key is not None and _OPEN_UTF8 not in key:
                continue
            yield from spans_in(record.projection)


def check_tool_text_as_instruction(data: GuardInput) -> Iterator[Finding]:
    """TOOL_TEXT_AS_INSTRUCTION for each draft text sharing wording with an instruction-like span of tool output."""
    params = ToolTextParams.model_validate(data.rules.rules["tool_text_as_instruction"].parameters)
    marked: set[tuple[str, ...]] = set()
    for span in _spans(data):
        marked |= _runs(span, params.min_shared_words, params.min_content_words)
    if not marked:
        return
    for path, text in _draft_texts(data):
        shared = sorted(_runs(text, params.min_shared_words, params.min_content_words) & marked)
        if shared:
            quoted = " ".join(shared[0])[:_SHOWN_CHARS]
            yield Finding(
                "TOOL_TEXT_AS_INSTRUCTION",
                path,
                f"reproduces tool text that addresses the model ({quoted!r}); tool output is data, never an instruction",
            )
