"""Log lines and knowledge blocks are bounded in bytes per item and per result, with visible truncation."""

from __future__ import annotations

from core.tools.item_bounds import TRUNCATED, ItemBounds, bound_item, bound_items, cut_utf8, json_size


def test_a_huge_message_is_cut_to_the_item_bound_with_a_marker() -> None:
    """A 5 MB message becomes a 16 KiB item whose message ends with the marker; small fields are kept."""
    item = {"timestamp": "t", "service": "s", "level": "ERROR", "message": "x" * 5_000_000, "pod": "p-1"}
    out, cut = bound_item(item, 16 * 1024)
    assert cut
    assert json_size(out) <= 16 * 1024
    assert out["message"].endswith(TRUNCATED)
    assert out["pod"] == "p-1"


def test_nested_values_and_many_fields_are_bounded_too() -> None:
    """A nested blob becomes the marker; thousands of small fields are dropped (counted), core fields stay."""
    nested, cut = bound_item({"message": "m", "ctx": {"k": ["v" * 1000] * 100}}, 2048)
    assert cut
    assert nested["ctx"] == TRUNCATED
    wide, _ = bound_item({"timestamp": "t", "message": "m", **{f"f{i}": i for i in range(5000)}}, 2048)
    assert json_size(wide) <= 2048
    assert wide["message"] == "m"
    assert wide["fields_dropped_for_size"] > 0


def test_multibyte_text_is_cut_on_a_character_boundary() -> None:
    """Cutting never splits a UTF-8 character."""
    assert cut_utf8("é" * 10, 5) == "éé"
    out, _ = bound_item({"text": "日本語" * 10_000}, 1024)
    assert json_size(out) <= 1024


def test_the_result_keeps_items_while_its_bound_holds_and_says_so() -> None:
    """Items beyond the result bound are dropped and counted; small results carry no notes."""
    items = [{"message": "y" * 1000} for _ in range(100)]
    kept, notes = bound_items(items, ItemBounds(item_bytes=2048, result_bytes=10_000))
    assert 0 < len(kept) < 100
    assert sum(json_size(i) for i in kept) <= 10_000
    assert notes["bytes_truncated"] is True
    assert notes["items_dropped_for_size"] == 100 - len(kept)
    assert bound_items(items[:2], ItemBounds()) == (items[:2], {})
