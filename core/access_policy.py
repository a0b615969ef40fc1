"""Who may ask (SPEC §10): which channels the bot answers in, who may ask it in a DM, whether guests may ask.

Pure and small so every entry point can call it: the Slack listeners (mentions, thread replies, DMs, the assistant
container, /diag, button clicks; bot/ask_gate.py adds the user-group and guest look-ups) and the alert triggers
(`channel_allowed`). Parsed once from the settings (DIAG_ALLOWED_CHANNELS, DIAG_DM_USERS, DIAG_ALLOW_GUESTS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{1,20}\Z")
_USER_ID = re.compile(r"[UW][A-Z0-9]{1,20}\Z")
_GROUP_ID = re.compile(r"S[A-Z0-9]{1,20}\Z")


class Refusal(StrEnum):
    """Why an asker is refused; the text is the one short line they see (ephemeral)."""

    CHANNEL = ("I'm not enabled in this channel, so I did not start anything. Ask in a channel I serve, or ask an "
               "operator to add this one.")
    DM_OFF = "I don't take questions in direct messages here, so I did not start anything. Ask in an incident channel."
    DM_USER = ("You are not among the people who may ask me in direct messages, so I did not start anything. "
               "Ask in an incident channel.")
    GUEST = "Guest accounts can't ask me questions here, so I did not start anything."
    UNCHECKED = "I couldn't check whether you may ask me right now, so I did not start anything. Please try again."


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.replace("\n", ",").split(",") if item.strip()]


def parse_channels(text: str | None) -> frozenset[str] | None:
    """DIAG_ALLOWED_CHANNELS: comma-separated channel ids; None (unset or empty) allows every channel."""
    if text is None or not text.strip():
        return None
    items = _items(text)
    bad = [item for item in items if not _CHANNEL_ID.match(item)]
    if bad:
        raise ValueError(f"{bad[0][:40]!r} is not a Slack channel id (C… or G…, e.g. C0123ABCD); list channel ids, "
                         "not names, separated by commas")
    return frozenset(items)


@dataclass(frozen=True)
class DmRule:
    """DIAG_DM_USERS: `all`, `none`, or the users (U…/W…) and user groups (S…) who may ask in a DM."""

    everyone: bool = True
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str | None) -> DmRule:
        value = (text or "all").strip()
        if value.lower() == "all":
            return cls()
        if value.lower() == "none":
            return cls(everyone=False)
        items = _items(value)
        bad = [item for item in items if not (_USER_ID.match(item) or _GROUP_ID.match(item))]
        if bad or not items:
            raise ValueError(f"{(bad or [value])[0][:40]!r} is neither `all`, `none`, a user id (U…/W…) nor a user "
                             "group id (S…); list ids separated by commas")
        return cls(everyone=False, users=frozenset(i for i in items if _USER_ID.match(i)),
                   groups=frozenset(i for i in items if _GROUP_ID.match(i)))

    def describe(self) -> str:
        if self.everyone:
            return "everyone"
        if not self.users and not self.groups:
            return "nobody"
        return f"{len(self.users)} user(s) and {len(self.groups)} user group(s)"


@dataclass(frozen=True)
class AccessPolicy:
    """The whole policy; `None` channels means every channel the bot is in."""

    channels: frozenset[str] | None = None
    dm: DmRule = DmRule()
    allow_guests: bool = False

    def channel_allowed(self, channel: str) -> bool:
        """True when the bot may start work in this (non-DM) channel; alert triggers call this too."""
        return self.channels is None or channel in self.channels

    def place_refusal(self, channel: str, user: str, is_dm: bool) -> Refusal | None:
        """What the channel / DM rules alone decide (user groups and guests need Slack: bot/ask_gate.py)."""
        if not is_dm:
            return None if self.channel_allowed(channel) else Refusal.CHANNEL
        if self.dm.everyone or user in self.dm.users:
            return None
        return Refusal.DM_OFF if not self.dm.users and not self.dm.groups else None

    def describe(self) -> str:
        """One line for `diagbot check`."""
        channels = "every channel the bot is in" if self.channels is None else ", ".join(sorted(self.channels))
        guests = "allowed" if self.allow_guests else "refused"
        return f"channels: {channels}; DMs: {self.dm.describe()}; guests: {guests}"


def is_dm_channel(channel: str, channel_type: str | None = None) -> bool:
    """A direct message with the bot (channel_type `im`, or a D… channel id)."""
    return channel_type == "im" or channel.startswith("D")
