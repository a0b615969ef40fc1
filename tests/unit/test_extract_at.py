"""extract_at starts its scan after the last separator before the offset (a character no token holds): it must read
the same token as scanning from three spaces back, as it did before."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.guard.quantities.extract import _quantity, extract_at, three_spaces_back
from core.guard.quantities.model import Quantity
from core.guard.quantities.tokens import scan

_PIECES = st.sampled_from([
    *"0123456789", " ", " ", ":", "-", ".", "/", ",", ";", "%", "(", ")", "=", "#", "_", "x", "v", "k", "M", "s", "m",
    "h", "T", "Z", "a", "p", "\"", "'", "[", "]", "{", "}", "!", "?", "<", ">", "&", "*", "@", "|", "\\", "~", "^", "$",
    "`", "\t", "\n", "é", "ſ", "\u00a0", "٣", "Nov ", "Jan", "sept", " per ", "ms", " min", "UTC", "st", "pm", "GiB",
    "rps", " percent", "24/7", "HikariPool-", "svc-", "v4.", "1.2.3", "2026-11-29", "23:05:28", "10.0.0.1", "5xx",
    "idle=", "(total=", " errors per minute", "HTTP ", "about ", "Mar 3",
])


def _from_three_spaces_back(text: str, offset: int) -> list[Quantity] | str:
    start = three_spaces_back(text, offset)
    try:
        for match in scan(text, start):
            if match.end() > offset:
                if match.start() > offset:
                    return []
                quantity = _quantity(text, match)
                return [quantity] if quantity is not None else []
    except (OverflowError, KeyError) as error:  # (odd exponents and folded letters: both paths raise alike)
        return type(error).__name__
    return []


def _read(text: str, offset: int) -> list[Quantity] | str:
    try:
        return extract_at(text, offset)
    except (OverflowError, KeyError) as error:
        return type(error).__name__


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=30).map("".join), st.data())
def test_extract_at_reads_what_a_scan_from_three_spaces_back_reads(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert _read(text, offset) == _from_three_spaces_back(text, offset)


def test_a_value_after_a_separator_is_read_from_there() -> None:
    message = "request timed out after 30000ms (total=10, active=10, idle=0, waiting=7) order_id=ord-1000"
    (idle,) = extract_at(message, message.index("idle=0") + 5)
    assert (idle.value, idle.start) == (0.0, message.index("idle=0") + 5)
    (waiting,) = extract_at(message, message.index("waiting=7") + 8)
    assert (waiting.value, waiting.text) == (7.0, "7")
    text = "seen (Nov 3"  # after a separator a month name is not read as one (as a full scan reads it)
    assert [q.text for q in extract_at(text, len(text) - 1)] == ["3"]
