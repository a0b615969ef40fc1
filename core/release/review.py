"""The independent reviewer's reason, made safe to show: as written when it quotes only verified evidence, else a summary.

The reviewer read the rejected draft, so its free text may repeat the draft's unverified claims. It is shown only
when every quoted span and every number in it appears in the verified evidence it judged.
"""

from __future__ import annotations

import json
import re

from core.contracts.release import VerifiedEvidenceSnapshot
from core.evidence.subjects import cut_words, flat

REASON_SHOWN_MAX = 300
SUMMARY = ("The reviewer found that the cited tool results do not show what the draft claimed; "
           "its full reason is in the run's trace.")
_QUOTED = re.compile(r"\"([^\"]{3,})\"|“([^”]{3,})”|'([^']{3,})'|`([^`]{3,})`")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def evidence_text(snapshot: VerifiedEvidenceSnapshot) -> str:
    """Everything the verified evidence says (projections and effective arguments), normalised for look-ups."""
    parts = [json.dumps(snapshot.projections, ensure_ascii=False, default=str),
             json.dumps(snapshot.effective_arguments, ensure_ascii=False, default=str)]
    # JSON escapes quotes inside strings; the raw values are what a quote is matched against.
    return _norm(" ".join(parts).replace('\\"', '"'))


def quotes_only_evidence(reason: str, snapshot: VerifiedEvidenceSnapshot) -> bool:
    """True when every quoted span and every number in `reason` appears in the verified evidence."""
    haystack = evidence_text(snapshot)
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(reason)]
    if any(_norm(q) not in haystack for q in quoted):
        return False
    numbers = set(_NUMBER.findall(reason))
    evidence_numbers = set(_NUMBER.findall(haystack))
    return numbers <= evidence_numbers


def shown_reason(reason: str, snapshot: VerifiedEvidenceSnapshot | None) -> str:
    """The reason as shown in Slack: the reviewer's words when safe (bounded, redacted), else the summary."""
    text = flat(reason)
    if not text or snapshot is None or not quotes_only_evidence(text, snapshot):
        return SUMMARY
    return "The reviewer said: " + cut_words(text, REASON_SHOWN_MAX)
