"""`diagbot eval`: the shipped grounding corpus meets the goal (CI fails otherwise), and the runner reports misses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.guard.corpus import CorpusError, load_corpus, run_corpus
from core.guard.rules import load_rules
from entrypoints.cli import main
from entrypoints.eval_cmd import run_eval

CORPUS = Path(__file__).resolve().parents[2] / "eval" / "grounding"
KINDS = ["count", "number", "percentage", "duration", "size", "rate", "time", "date", "version", "identifier"]
OTHER = ["derived-time-difference", "derived-window-length", "derived-percentage", "derived-item-count", "derived-sum",
         "argument-limit", "argument-window", "argument-query", "field-conclusion", "field-action",
         "field-recommendation", "field-limitations", "number-words", "magnitude", "citation"]


async def test_shipped_corpus_blocks_every_invented_case_and_rejects_at_most_two_percent_of_honest_ones() -> None:
    """The goal of issue 9, measured by the real EvidenceGuard over the demo incident's real tool records."""
    report = await run_corpus(CORPUS, load_rules())
    assert len(report.results) >= 200
    misses = [(m.case.id, m.codes, m.messages) for m in report.misses if not m.case.expect.valid]
    assert report.block_rate == 1.0, misses
    assert report.false_reject_rate <= 0.02, [(m.case.id, m.messages) for m in report.misses]


def test_corpus_covers_each_kind_derivation_argument_rule_and_field_in_both_directions() -> None:
    """Every category has invented cases, and every one but the citation faults has honest ones too."""
    _, cases = load_corpus(CORPUS)
    categories: dict[str, set[bool]] = {}
    for case in cases:
        categories.setdefault(case.category, set()).add(case.expect.valid)
    for name in KINDS + OTHER:
        assert categories.get(name) == {True, False}, name


def _write(tmp_path: Path, cases: list[dict[str, object]]) -> Path:
    (tmp_path / "records.jsonl").write_text((CORPUS / "records.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return tmp_path


def _case(text: str, valid: bool) -> dict[str, object]:
    return {
        "id": f"t-{valid}", "category": "count", "calls": ["c_pool"], "expect": {"valid": valid, "codes": [] if valid else
                                                                                  ["NUMBER_NOT_IN_EVIDENCE"]},
        "draft": {"analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": text, "tool_call_ids": ["c_pool"]}],
                  "limitations": {"scope": "order-service ERROR logs"}},
    }


async def test_a_corpus_with_a_miss_fails_and_prints_the_miss(tmp_path: Path) -> None:
    """An invented case the guard lets through, or an honest one it rejects, is printed and fails the run (exit 1)."""
    corpus = _write(tmp_path, [_case("3 pods were OOMKilled.", True), _case("493 lines matched.", False)])
    lines: list[str] = []
    assert await run_eval(corpus, load_rules(), lines.append) == 1
    text = "\n".join(lines)
    assert "MISS t-True [count]: expected valid, got rejected" in text
    assert "'3' is a count; the cited calls show 3 only inside" in text
    assert "timestamps" in text
    assert "MISS t-False [count]: expected rejected" in text
    assert "blocked 0.0% of 1 invented, false rejects 100.0% of 1 honest" in text


def test_a_passing_corpus_exits_zero_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot eval PATH` prints the per-category table and exits 0 when the goal is met."""
    corpus = _write(tmp_path, [_case("493 lines matched.", True), _case("494 lines matched.", False)])
    assert main(["eval", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "1/1" in out
    assert "0/1" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [("not json\n", "not JSON"), ("[1]\n", "JSON object"), ('{"id": "x"}\n', "not a case"),
     (json.dumps({**_case("x", True), "calls": ["nope"]}) + "\n", "names calls not in records.jsonl")],
)
def test_a_bad_corpus_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    """Each bad line names the file, the line and the problem."""
    _write(tmp_path, [])
    (tmp_path / "cases.jsonl").write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        load_corpus(tmp_path)


async def test_an_unreadable_corpus_exits_two(tmp_path: Path) -> None:
    """A missing path is exit 2 with one line."""
    lines: list[str] = []
    assert await run_eval(tmp_path / "missing", load_rules(), lines.append) == 2
    assert lines == [f"diagbot eval: {tmp_path / 'missing'}: no such file or folder"]
