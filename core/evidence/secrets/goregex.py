"""Go (RE2) regular expressions, as gitleaks writes them, rewritten for Python's `re`.

The differences that matter for gitleaks' rule file: RE2 allows a flag group such as `(?i)` anywhere (it applies to the
end of the enclosing group, across `|`), Python only at the very start; RE2 has POSIX classes (`[[:alnum:]]`) and `\\z`.
Anything else that does not compile in Python makes the caller skip that rule (and say so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

_POSIX = MappingProxyType({
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z", "space": r"\s",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "punct": r"!-/:-@\[-`{-~", "blank": r" \t", "cntrl": r"\x00-\x1f\x7f",
    "print": r"\x20-\x7e", "graph": r"\x21-\x7e",
})
# Inside a Python character class these pairs warn ("possible set operation") and may change meaning later.
_SET_OPERATORS = ("--", "&&", "~~", "||")


@dataclass
class _Group:
    """One open group while rewriting: how many flag scopes were opened in it and which flags are active."""

    opened: int = 0
    flags: list[str] = field(default_factory=list)


def _class_end(pattern: str, start: int) -> int:
    """Index just past the `]` closing the class that opens at `start`."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            if close != -1:
                i = close + 2
                continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    raise ValueError("unterminated character class")


def _char_class(body: str) -> str:
    """Rewrite the inside of one class (without its brackets): POSIX names expanded, `[` and set operators escaped."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            out.append(body[i : i + 2])
            i += 2
            continue
        if body.startswith("[:", i):
            close = body.find(":]", i + 2)
            name = body[i + 2 : close] if close != -1 else ""
            if name in _POSIX:
                out.append(_POSIX[name])
                i = close + 2
                continue
            raise ValueError(f"unknown POSIX class {name!r}")
        char = body[i]
        # `[`, and both characters of a set operator pair (the second one follows an escaped first one).
        pair = char in "-&~|" and (body[i : i + 2] in _SET_OPERATORS or (bool(out) and out[-1] == "\\" + char))
        if char == "[" or pair:
            out.append("\\" + char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _flag_group(pattern: str, i: int) -> str | None:
    """The flags of an inline flag group `(?i)` starting at `i` (not a `(?i:...)` group), else None."""
    if not pattern.startswith("(?", i):
        return None
    j = i + 2
    while j < len(pattern) and (pattern[j].isalpha() or pattern[j] == "-"):
        j += 1
    if j > i + 2 and j < len(pattern) and pattern[j] == ")":
        return pattern[i + 2 : j]
    return None


def translate(pattern: str) -> str:
    """The Python equivalent of one RE2 pattern; raises ValueError when it cannot be rewritten."""
    out: list[str] = []
    stack = [_Group()]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escape = pattern[i : i + 2]
            out.append("\\Z" if escape == "\\z" else escape)
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            negate = pattern[i + 1] == "^"
            body = pattern[i + (2 if negate else 1) : end - 1]
            out.append("[" + ("^" if negate else "") + _char_class(body) + "]")
            i = end
            continue
        flags = _flag_group(pattern, i)
        if flags is not None:
            if "U" in flags:
                raise ValueError("ungreedy flag has no Python equivalent")
            i += len(flags) + 3
            if i == len(flags) + 3 and len(stack) == 1:
                out.append(f"(?{flags})")  # at the very start: a global flag, as in Python
                continue
            out.append(f"(?{flags}:")
            stack[-1].opened += 1
            stack[-1].flags.append(flags)
            continue
        if char == "(":
            stack.append(_Group())
        elif char == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced parenthesis")
            out.append(")" * stack.pop().opened)
        elif char == "|":
            group = stack[-1]
            out.append(")" * group.opened + "|" + "".join(f"(?{f}:" for f in group.flags))
            group.opened = len(group.flags)
            i += 1
            continue
        out.append(char)
        i += 1
    if len(stack) != 1:
        raise ValueError("unbalanced parenthesis")
    out.append(")" * stack[0].opened)
    return "".join(out)
