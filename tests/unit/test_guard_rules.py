"""The versioned rules file: loading, load errors, and how enabled/severity change what the guard reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import Severity
from core.guard.checks import CHECKS
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import DEFAULT_RULES_FILE, RULE_CODES, RulesFileError, load_rules, parse_rules
from core.settings import Settings
from core.stores.canonical import InMemoryCanonicalStore
from tests.unit.test_guard_codes import RUN, run_records, valid_draft

BASE = DEFAULT_RULES_FILE.read_text(encoding="utf-8")


def test_default_rules_file_loads_with_its_version_and_every_rule() -> None:
    """The shipped rules file names every rule, all enabled and rejecting, under version 2026-12-01.3."""
    rules = load_rules()
    assert rules.rule_set_version == "2026-12-01.3"
    assert set(rules.rules) == set(RULE_CODES) == set(CHECKS)
    assert all(r.enabled and r.severity is Severity.REJECT for r in rules.rules.values())
    assert rules.numeric.min_digits == 1
    assert rules.numeric.allow_arguments


def test_settings_point_at_the_shipped_rules_file() -> None:
    """Settings.diag_rules_file defaults to the file the guard loads."""
    assert load_rules(Settings().diag_rules_file).rule_set_version == load_rules().rule_set_version


def test_every_code_belongs_to_exactly_one_rule() -> None:
    """Codes do not overlap between rules, so disabling a rule has a clear effect."""
    all_codes = [code for codes in RULE_CODES.values() for code in codes]
    assert len(all_codes) == len(set(all_codes)) == 21


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (BASE + '\n[rules.made_up]\ndescription = "x"\n', "unknown rule id"),
        (BASE.replace('severity = "warn"', "").replace('severity = "reject"', 'severity = "block"', 3), "severity"),
        (BASE.replace("[rules.limitations_scope]", "[rules_disabled.limitations_scope]"), "rules_disabled"),
        (BASE.replace('rule_set_version = "2026-12-01.3"', ""), "rule_set_version"),
        (BASE.replace("min_digits = 1", "min_digits = 1\nmax_digits = 3"), "max_digits"),
        (BASE.replace("min_digits = 1", "min_digits = 0"), "min_digits"),
        (BASE + "\n[rules.evidence_kind.parameters]\nstrict = true\n", "takes no parameters"),
        ("rule_set_version = [", "not valid TOML"),
    ],
    ids=["unknown-rule", "bad-severity", "missing-rule", "no-version", "unknown-param", "bad-param", "stray-param", "bad-toml"],
)
def test_bad_rules_files_fail_loudly(text: str, fragment: str) -> None:
    """Unknown or missing rules, bad severities or parameters and broken TOML are load errors naming the problem."""
    with pytest.raises(RulesFileError, match=fragment):
        parse_rules(text, "rules.toml")


def test_missing_rule_is_named_in_the_error() -> None:
    """Leaving a rule out of the file is an error that names it."""
    start = BASE.index("[rules.limitations_scope]")
    end = BASE.index("[rules.invocation_ownership]")
    with pytest.raises(RulesFileError, match="limitations_scope"):
        parse_rules(BASE[:start] + BASE[end:])


def _edit_rule(rule_id: str, key: str, value: str) -> str:
    """The shipped file with one line of one rule's table replaced."""
    header = BASE.index(f"[rules.{rule_id}]")
    line_start = BASE.index(f"{key} = ", header)
    line_end = BASE.index("\n", line_start)
    return BASE[:line_start] + f"{key} = {value}" + BASE[line_end:]


@pytest.mark.parametrize("rule_id", ["invocation_ownership", "draft_structure"])
@pytest.mark.parametrize(("key", "value"), [("enabled", "false"), ("severity", '"warn"')])
def test_locked_rules_cannot_be_disabled_or_downgraded(rule_id: str, key: str, value: str) -> None:
    """The rules closure rests on stay enabled and rejecting whatever the file says."""
    with pytest.raises(RulesFileError, match="locked"):
        parse_rules(_edit_rule(rule_id, key, value))


def test_other_rules_can_be_tuned_in_the_file() -> None:
    """An operator may disable or downgrade any unlocked rule by editing the file."""
    rules = parse_rules(_edit_rule("evidence_kind", "enabled", "false"))
    assert not rules.rules["evidence_kind"].enabled
    rules = parse_rules(_edit_rule("numeric_grounding", "severity", '"warn"'))
    assert rules.rules["numeric_grounding"].severity is Severity.WARN


def test_unreadable_rules_file_is_a_clear_error(tmp_path: Path) -> None:
    """A missing rules file is reported with its path."""
    with pytest.raises(RulesFileError, match="cannot read"):
        load_rules(tmp_path / "nope.toml")


async def _check(draft: dict[str, Any], **rule_changes: dict[str, Any]) -> Any:
    rules = load_rules()
    for rule_id, change in rule_changes.items():
        rules = rules.with_rule(rule_id, **change)
    store = InMemoryCanonicalStore()
    for record in run_records():
        await store.put(record)
    return await EvidenceGuard(store, rules).check(RUN, DiagnosisDraft.model_validate(draft))


async def test_disabling_a_rule_stops_its_codes() -> None:
    """With numeric_grounding or limitations_scope disabled their faults pass, with no warning either."""
    draft = valid_draft()
    draft["analysis"][0]["text"] = "OOM 3 times; slow SQL took 12s."
    draft["limitations"]["scope"] = ""
    enabled = await _check(draft)
    assert {v.code for v in enabled.violations} == {"NUMBER_NOT_IN_EVIDENCE", "LIMITATIONS_SCOPE_MISSING"}
    disabled = await _check(draft, numeric_grounding={"enabled": False}, limitations_scope={"enabled": False})
    assert disabled.valid
    assert disabled.violations == []
    assert disabled.warnings == []


async def test_warn_severity_passes_with_warnings_in_result_and_snapshot() -> None:
    """A warn rule's findings do not block: the draft is valid and the findings travel as warnings."""
    draft = valid_draft()
    draft["analysis"][0]["text"] = "OOM 3 times in HikariPool-1."
    result = await _check(draft, numeric_grounding={"severity": "warn"})
    assert result.valid
    assert [w.code for w in result.warnings] == ["NUMBER_NOT_IN_EVIDENCE"]
    assert result.warnings[0].severity is Severity.WARN
    assert result.warnings[0].rule_id == "numeric_grounding"
    assert result.snapshot is not None
    assert result.snapshot.warnings == result.warnings


async def test_numeric_parameters_change_what_is_checked() -> None:
    """ignore and min_digits exempt numbers; allow_arguments=false stops the window from grounding."""
    draft = valid_draft()
    draft["analysis"][0]["text"] = "OOM 3 times in HikariPool-1."
    ignored = await _check(draft, numeric_grounding={"parameters": {"ignore": ["3"]}})
    assert ignored.valid
    short = await _check(draft, numeric_grounding={"parameters": {"min_digits": 2}})
    assert short.valid
    limited = valid_draft()
    limited["analysis"][0]["text"] = "37 ERROR lines matched HikariPool-1 timeouts; the first 20 were read."
    assert (await _check(limited)).valid, "20 is the call's limit argument"
    no_args = await _check(limited, numeric_grounding={"parameters": {"allow_arguments": False}})
    assert [(v.path, v.code) for v in no_args.violations] == [("analysis[0].text", "NUMBER_NOT_IN_EVIDENCE")]


def test_numeric_parameters_live_only_under_their_rule() -> None:
    """A top-level `numeric` table is rejected, so parameters have exactly one place in the file."""
    with pytest.raises(RulesFileError, match="numeric"):
        parse_rules(BASE.replace('rule_set_version = "2026-12-01.3"', 'rule_set_version = "x"\nnumeric = {min_digits = 3}'))
