"""Plain words: every violation code the guard can emit, and every tool error code the tools raise, has words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.guard.rules import RULE_CODES
from core.release.wording import TOOL_ERROR_WORDS, UNKNOWN_VIOLATION, VIOLATION_SENTENCES, violation_sentences

ALL_CODES = sorted({code for codes in RULE_CODES.values() for code in codes})
CORE = Path(__file__).resolve().parents[2] / "core"


@pytest.mark.parametrize("code", ALL_CODES)
def test_every_violation_code_has_its_own_sentence(code: str) -> None:
    """A sentence per guard code, ending with a full stop and free of codes and underscores."""
    sentence = VIOLATION_SENTENCES[code]
    assert sentence != UNKNOWN_VIOLATION
    assert sentence.endswith(".")
    assert "_" not in sentence


def test_every_tool_error_code_raised_in_core_has_words() -> None:
    """Each ToolFailure / ToolError code in core/ is in the words table."""
    raised = set()
    for path in CORE.rglob("*.py"):
        text = path.read_text()
        raised |= set(re.findall(r'ToolFailure\("([A-Z_]+)"', text)) | set(re.findall(r'code="([A-Z_]+)"', text))
    assert raised, "the scan found the codes"
    assert raised - set(TOOL_ERROR_WORDS) == set()


def test_sentences_are_deduplicated_and_bounded() -> None:
    """Many violations read as at most three sentences plus a count of the rest."""
    text = violation_sentences(["INVOCATION_MISSING"] * 4 + ["NUMBER_NOT_IN_EVIDENCE", "TEXT_MISSING", "DRAFT_EMPTY"])
    assert text.count("never happened") == 1
    assert text.endswith("(1 more problem in the trace.)")
