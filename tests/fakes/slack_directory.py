"""users.info and usergroups.users.list of the fake Slack, answering as Slack's reference documents them.

- users.info (docs.slack.dev/reference/methods/users.info): `{"ok": true, "user": {id, team_id, name, deleted,
  is_admin, is_owner, is_bot, is_restricted, is_ultra_restricted, is_app_user, profile, ...}}`; an unknown id is
  `user_not_found`. Guests are restricted (multi-channel) or ultra-restricted (single-channel) accounts.
- usergroups.users.list (docs.slack.dev/reference/methods/usergroups.users.list): `usergroup` required,
  `include_disabled` optional; `{"ok": true, "users": [...]}`; an unknown group is `no_such_subteam`, a missing
  argument `invalid_arguments`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

_USER = re.compile(r"[UW][A-Z0-9]{1,20}\Z")
Guest = Literal["restricted", "ultra_restricted"]


class DirectorySurface:
    """Mixed into FakeSlack: `guests` marks guest accounts, `usergroups` lists each group's members."""

    guests: dict[str, Guest]
    usergroups: dict[str, list[str]]
    disabled_usergroups: set[str]

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user") or "")
        if not user:
            return {"ok": False, "error": "invalid_arguments"}
        if not _USER.match(user):
            return {"ok": False, "error": "user_not_found"}
        kind = self.guests.get(user)
        return {"ok": True, "user": {
            "id": user, "team_id": "T1", "name": user.lower(), "deleted": False, "color": "9f69e7",
            "real_name": f"User {user}", "tz": "Europe/Paris", "tz_label": "Central European Time", "tz_offset": 3600,
            "profile": {"real_name": f"User {user}", "display_name": user.lower(), "team": "T1"},
            "is_admin": False, "is_owner": False, "is_primary_owner": False,
            "is_restricted": kind is not None, "is_ultra_restricted": kind == "ultra_restricted",
            "is_bot": False, "is_app_user": False, "updated": 1700000000, "has_2fa": False}}

    def _m_usergroups_users_list(self, params: dict[str, Any]) -> dict[str, Any]:
        group = str(params.get("usergroup") or "")
        if not group:
            return {"ok": False, "error": "invalid_arguments"}
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        include_disabled = str(params.get("include_disabled", "")).lower() in {"1", "true"}
        if group in self.disabled_usergroups and not include_disabled:
            return {"ok": True, "users": []}
        return {"ok": True, "users": list(self.usergroups[group])}
