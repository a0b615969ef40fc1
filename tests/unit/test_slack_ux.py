"""Pieces of the Slack presentation: whole-token labels, inert mrkdwn, deep links, tables, kept evidence, votes."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.render.links import SourceLinks, linked
from bot.render.mrkdwn import escape
from bot.render.table import mono_table, table_block
from bot.verify import parse_vote
from core.contracts.feedback import Vote
from core.contracts.release import VerifiedEvidenceSnapshot
from core.evidence.subjects import cut_words
from core.release.evidence import kept_evidence
from core.tools.registry import spec_for
from testkit.tool_names import ToolName
from tests.fakes.slack_blocks import validate_blocks

SQL = "SELECT ts, active, idle FROM db_connection_pool_stats WHERE service = 'checkout-api' ORDER BY ts DESC LIMIT 5"


def test_sql_subjects_are_cut_between_whole_tokens_and_literals() -> None:
    """The first words of the SQL never end inside a word or a quoted literal."""
    assert cut_words(SQL, 80) == "SELECT ts, active, idle FROM db_connection_pool_stats WHERE service =…"
    assert cut_words(SQL, 86) == "SELECT ts, active, idle FROM db_connection_pool_stats WHERE service = 'checkout-api'…"
    assert "'checkout-api" in spec_for(ToolName.QUERY_MYSQL).subject({"sql": SQL}, None)


@given(st.text(alphabet=st.sampled_from("ab 'c_d"), max_size=200), st.integers(min_value=2, max_value=120))
def test_cut_words_is_bounded_and_a_prefix(text: str, limit: int) -> None:
    """Whatever the text, the cut is at most `limit` characters and (without its marker) a prefix of the text."""
    cut = cut_words(text, limit)
    assert len(cut) <= limit
    assert text.startswith(cut.removesuffix("…").rstrip())


def test_logs_subject_names_service_keywords_level_and_window() -> None:
    """What a logs call queried: service, keywords, level and the effective window."""
    subject = spec_for(ToolName.QUERY_LOGS).subject(
        {"service": "order-service", "query": "HikariPool", "level": "ERROR"},
        {"window_start": "2026-11-29T22:30:00+00:00", "window_end": "2026-11-29T23:30:00+00:00"})
    assert subject == 'order-service "HikariPool" ERROR, 22:30–23:30 UTC'


def test_escape_neutralises_formatting_markers_but_not_inner_underscores() -> None:
    """`_x_` and `*y*` from tool text stay literal; snake_case words are left alone."""
    out = escape("_pending_ and *all* rows of order_items")
    assert "\u200b_pending_\u200b" in out
    assert "\u200b*all*\u200b" in out
    assert "order_items" in out


def test_deep_links_encode_every_value_and_only_use_http_templates() -> None:
    """{service}/{query}/{start}/{end} are URL-encoded; a non-http template is ignored; the label cannot break out."""
    links = SourceLinks({ToolName.QUERY_LOGS: "https://grafana.example/explore?svc={service}&q={query}&from={start}&to={end}",
                         ToolName.QUERY_MYSQL: "javascript:alert({query})"})
    url = links.url(ToolName.QUERY_LOGS, {"service": "order service", "query": 'a|b>"c"'},
                    {"window_start": "2026-11-29T22:30:00Z", "window_end": "2026-11-29T23:30:00Z"})
    assert url == ("https://grafana.example/explore?svc=order%20service&q=a%7Cb%3E%22c%22"
                   "&from=2026-11-29T22%3A30%3A00Z&to=2026-11-29T23%3A30%3A00Z")
    assert links.url(ToolName.QUERY_MYSQL, {"sql": "SELECT 1"}, {}) is None
    assert linked("a|b <!here>", url) == f"<{url}|a¦b &lt;!here&gt;>"


def test_table_block_is_one_slack_accepts_with_the_header_first() -> None:
    """Column names are the first row; ragged rows are padded; long tables are cut to fit."""
    block = table_block(["a", "b"], [["1"], ["2", "3", "4"]] + [["x" * 200] * 3] * 500)
    assert [c["text"] for c in block["rows"][0]] == ["a", "b", " "]
    assert len({len(r) for r in block["rows"]}) == 1
    assert len(json.dumps(block)) <= 5200
    assert validate_blocks([block]) is None
    assert validate_blocks([block, block]) == "only_one_table_allowed"


def test_mono_table_aligns_columns_and_says_what_it_left_out() -> None:
    """An aligned table under its header; rows beyond the bound are counted, not silently dropped."""
    text = mono_table(["service", "n"], [["order-service", "5"]] + [["s" * 30, "1"]] * 200)
    assert text.startswith("```service")
    assert re.search(r"\norder-service +\| 5\n", text)
    assert "more rows not shown)" in text
    assert len(text) <= 2800


def test_kept_evidence_is_bounded_and_drops_the_last_items_of_the_largest_call() -> None:
    """Over the bound, the biggest projection loses items from its end (marked truncated); small ones are intact."""
    lines: list[dict[str, Any]] = [{"message": "m" * 500, "n": i} for i in range(200)]
    big: dict[str, Any] = {"tool_name": "query_logs", "logs": lines, "truncated": False}
    small = {"tool_name": "query_mysql", "columns": ["a"], "rows": [[1]], "truncated": False}
    snapshot = VerifiedEvidenceSnapshot(run_id="r", projections={"c1": big, "c2": small},
                                        effective_arguments={"c1": {"service": "x"}}, rule_set_version="v")
    projections, arguments = kept_evidence(snapshot, max_bytes=20_000)
    assert len(json.dumps(projections)) + len(json.dumps(arguments)) <= 20_000
    assert projections["c2"] == small
    assert projections["c1"]["truncated"] is True
    assert projections["c1"]["logs"][0]["n"] == 0
    assert snapshot.projections["c1"]["logs"][-1]["n"] == 199, "the snapshot itself is not changed"


def test_vote_values_parse_from_both_feedback_forms() -> None:
    """`up|run` / `down|run` from our buttons; anything else is refused."""
    assert parse_vote("up|run_1") == (Vote.UP, "run_1")
    assert parse_vote("down|run_1") == (Vote.DOWN, "run_1")
    assert parse_vote("sideways|run_1") is None
    assert parse_vote("up|") is None
