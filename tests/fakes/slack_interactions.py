"""What Slack sends when a user clicks an element of a message: a block_actions payload in the documented shape.

Follows docs.slack.dev/reference/interaction-payloads/block_actions-payload and bolt-js's BlockAction /
ButtonAction / FeedbackButtonsAction / IconButtonAction / OverflowAction types (the same shapes as
tests/slack_corpus/block_actions.json): the clicked element's `text` comes as its plain_text object, a feedback
button's `value` and `text` are those of the chosen (positive or negative) button, the message the element is in
comes whole, and `team` is an object (or null for an org-wide install, with `enterprise` and `is_enterprise_install`).
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

_action_ts = itertools.count(1)

Choice = Literal["positive", "negative"]


def _elements(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(block_id, element) for every interactive element of the message's blocks."""
    found: list[tuple[str, dict[str, Any]]] = []
    for block in message.get("blocks") or []:
        block_id = str(block.get("block_id") or "blk")
        for element in block.get("elements") or []:
            if isinstance(element, dict) and "action_id" in element:
                found.append((block_id, element))
        accessory = block.get("accessory")
        if isinstance(accessory, dict) and "action_id" in accessory:
            found.append((block_id, accessory))
    return found


def element_action(element: dict[str, Any], block_id: str, *, choice: Choice = "positive",
                   option: int = 0) -> dict[str, Any]:
    """The `actions[0]` Slack sends for a click on `element` (whatever its type)."""
    kind = element.get("type", "button")
    action: dict[str, Any] = {"type": kind, "action_id": element["action_id"], "block_id": block_id,
                              "action_ts": f"1700000900.{next(_action_ts):06d}"}
    if kind == "feedback_buttons":
        chosen = element[f"{choice}_button"]
        action.update(value=chosen["value"], text=chosen["text"])
    elif kind == "overflow":
        picked = element["options"][option]
        action["selected_option"] = {"text": picked["text"], "value": picked.get("value")}
    else:  # button, icon_button: text (plain_text), value, and whatever else the element declares
        for key in ("text", "value", "icon", "url", "style", "confirm"):
            if key in element:
                action[key] = element[key]
    return action


def block_actions(message: dict[str, Any], action_id: str, *, user: str, response_url: str, message_ts: str,
                  channel: str = "C1", team: str | None = "T1", enterprise: str | None = None,
                  choice: Choice = "positive", nth: int = 0) -> dict[str, Any]:
    """The payload of a click on the `nth` element `action_id` of `message` (as posted: blocks, text, thread_ts).

    `team=None` with an `enterprise` is an org-wide install's click: `team` null, `user.team_id` the org's id."""
    matches = [(block_id, e) for block_id, e in _elements(message) if e["action_id"] == action_id]
    if not matches:
        raise KeyError(f"no element {action_id!r} in the message")
    block_id, element = matches[nth]
    posted = {key: message[key] for key in ("text", "blocks", "thread_ts", "metadata") if key in message}
    container: dict[str, Any] = {"type": "message", "message_ts": message_ts, "channel_id": channel,
                                 "is_ephemeral": False}
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team or enterprise},
        "api_app_id": "A1",
        "token": "XXYYZZ",
        "container": container,
        "trigger_id": f"1700000900.{next(_action_ts)}.0123456789abcdef0123456789abcdef",
        "team": {"id": team, "domain": "example"} if team else None,
        "enterprise": {"id": enterprise, "name": "Example Org"} if enterprise else None,
        "is_enterprise_install": team is None and enterprise is not None,
        "channel": {"id": channel, "name": "incidents"},
        "message": {"type": "message", "user": "UBOT", "bot_id": "BBOT", "app_id": "A1", "ts": message_ts,
                    "team": team or "T1", **posted},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [element_action(element, block_id, choice=choice)],
    }


def labelled_element(action_id: str, value: str, kind: str = "button") -> dict[str, Any]:
    """An element as the bot renders it, for clicks on a message the test did not post (its label is a
    plain_text object, as Block Kit requires)."""
    label = {"type": "plain_text", "text": action_id.replace("_", " ").capitalize(), "emoji": True}
    if kind == "feedback_buttons":
        return {"type": kind, "action_id": action_id,
                "positive_button": {"text": {**label, "text": "👍"}, "value": value},
                "negative_button": {"text": {**label, "text": "👎"}, "value": value}}
    return {"type": kind, "action_id": action_id, "text": label, "value": value}
