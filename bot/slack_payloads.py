"""The shapes Slack documents for every request the app receives, as the allow-list the request guard checks.

Written from Slack's reference, not from what our own renderers send: the interaction payload pages
(docs.slack.dev/reference/interaction-payloads: block_actions, view_submission / view_closed, shortcuts), the
Events API envelope and event pages (app_mention, message and its subtypes, assistant_thread_*, url_verification),
the slash command form, and the types bolt-js publishes for them (BlockAction, ButtonAction, FeedbackButtonsAction,
IconButtonAction, OverflowAction, SlashCommand, ...). tests/slack_corpus/ holds those shapes as data, each file
naming the page it follows.

Each documented field that the framework or a listener reads has the types Slack documents for it, strictly (a
number is not text, "true" is not a boolean); Slack adds fields over time, so fields not named here pass as they
are. A button's `text` is a plain_text object; `team` is an object or null (org-wide installs); `enterprise` an
object or null in interaction payloads and an id in event envelopes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$")]
Command = Annotated[str, StringConstraints(pattern=r"^/\S{1,64}$")]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)


# ---- parts ------------------------------------------------------------------------------------------------------


class TextObject(_Shape):
    """A composition text object: `plain_text` (buttons, options, titles) or `mrkdwn`."""

    type: Literal["plain_text", "mrkdwn"]
    text: str
    emoji: bool | None = None
    verbatim: bool | None = None


class IdObject(_Shape):
    """An object naming something by id (a channel in channel_created, a user in user_change...)."""

    id: str


class Team(_Shape):
    """The workspace of an interaction; in a Grid org also its enterprise."""

    id: str
    domain: str | None = None
    enterprise_id: str | None = None
    enterprise_name: str | None = None


class User(_Shape):
    """Who interacted; `team_id` is the org's id (E…) for an org-wide install."""

    id: str
    username: str | None = None
    name: str | None = None
    team_id: str | None = None


class Channel(_Shape):
    id: str
    name: str | None = None


class Enterprise(_Shape):
    id: str
    name: str | None = None


class Option(_Shape):
    text: TextObject
    value: str | None = None


class Action(_Shape):
    """One element action of block_actions: button and icon_button (`text`, `value`), feedback_buttons (`text`,
    `value` of the chosen button), overflow and selects (`selected_option`), and any other element's."""

    type: str
    action_id: str
    block_id: str | None = None
    action_ts: str | None = None
    value: str | None = None
    text: TextObject | None = None
    icon: str | None = None
    url: str | None = None
    style: str | None = None
    selected_option: Option | None = None
    selected_options: list[Option] | None = None


class Container(_Shape):
    """Where the interaction happened: a message (`message_ts`, `channel_id`, `is_ephemeral`) or a view."""

    type: str
    message_ts: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None
    is_ephemeral: bool | None = None
    view_id: str | None = None


class Message(_Shape):
    """A message object as events and interactions carry it (its blocks and attachments are not read)."""

    type: str | None = None
    subtype: str | None = None
    user: str | None = None
    bot_id: str | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    team: str | None = None


class View(_Shape):
    """A modal or Home tab view (its blocks and state values are not read)."""

    id: str
    type: str
    callback_id: str | None = None
    team_id: str | None = None
    app_installed_team_id: str | None = None
    private_metadata: str | None = None
    external_id: str | None = None
    state: dict[str, Any] | None = None


class ResponseUrl(_Shape):
    response_url: Url
    channel_id: str | None = None
    block_id: str | None = None
    action_id: str | None = None


class Authorization(_Shape):
    """One installation the event is for (Events API `authorizations`)."""

    enterprise_id: str | None = None
    team_id: str | None = None
    user_id: str | None = None
    is_bot: bool | None = None
    is_enterprise_install: bool | None = None


class AssistantContext(_Shape):
    channel_id: str | None = None
    team_id: str | None = None
    enterprise_id: str | None = None


class AssistantThread(_Shape):
    user_id: str | None = None
    channel_id: str
    thread_ts: str
    context: AssistantContext | None = None


class Event(_Shape):
    """The inner event of an event_callback: any event type; the fields Bolt's matchers and our listeners read."""

    type: str
    subtype: str | None = None
    user: str | IdObject | None = None
    channel: str | IdObject | None = None
    team: str | IdObject | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    event_ts: str | None = None
    channel_type: str | None = None
    bot_id: str | None = None
    user_team: str | None = None
    message: Message | None = None
    previous_message: Message | None = None
    item: dict[str, Any] | None = None
    assistant_thread: AssistantThread | None = None


# ---- payloads ---------------------------------------------------------------------------------------------------


class EventCallback(_Shape):
    type: Literal["event_callback"]
    event: Event
    team_id: str | None = None
    enterprise_id: str | None = None
    context_team_id: str | None = None
    context_enterprise_id: str | None = None
    api_app_id: str | None = None
    event_id: str | None = None
    event_time: int | None = None
    authorizations: list[Authorization] | None = None
    is_ext_shared_channel: bool | None = None


class UrlVerification(_Shape):
    type: Literal["url_verification"]
    challenge: str


class AppRateLimited(_Shape):
    type: Literal["app_rate_limited"]
    team_id: str | None = None
    minute_rate_limited: int | None = None


class _Interaction(_Shape):
    """What every interaction payload carries."""

    team: Team | None = None
    user: User
    api_app_id: str | None = None
    trigger_id: str | None = None
    enterprise: Enterprise | None = None
    is_enterprise_install: bool | None = None


class BlockActions(_Interaction):
    type: Literal["block_actions"]
    actions: list[Action] = Field(min_length=1)
    container: Container | None = None
    channel: Channel | None = None
    message: Message | None = None
    view: View | None = None
    state: dict[str, Any] | None = None
    response_url: Url | None = None


class ViewSubmission(_Interaction):
    type: Literal["view_submission"]
    view: View
    # an array, empty when the modal has no response_url_enabled input (Slack's view_submission reference shows
    # "response_urls": []); never null: Bolt takes its len()
    response_urls: list[ResponseUrl] = Field(default_factory=list)


class ViewClosed(_Interaction):
    type: Literal["view_closed"]
    view: View
    is_cleared: bool | None = None


class GlobalShortcut(_Interaction):
    type: Literal["shortcut"]
    callback_id: str
    action_ts: str | None = None


class MessageShortcut(_Interaction):
    type: Literal["message_action"]
    callback_id: str
    message_ts: str | None = None
    message: Message
    channel: Channel
    response_url: Url | None = None


class AnyPayload(_Shape):
    """Any other JSON payload (legacy interactive_message, block_suggestion, dialogs...): Bolt still reads its ids
    and its type, so those must be what Slack sends wherever they appear."""

    type: str | None = None
    team: str | Team | None = None
    user: str | User | None = None
    channel: str | Channel | None = None
    enterprise: str | Enterprise | None = None
    team_id: str | None = None
    user_id: str | None = None
    channel_id: str | None = None
    enterprise_id: str | None = None
    callback_id: str | None = None
    event: Event | None = None
    authorizations: list[Authorization] | None = None
    actions: list[dict[str, Any]] | None = None
    response_url: Url | None = None
    response_urls: list[ResponseUrl] = Field(default_factory=list)  # as ViewSubmission's: never null
    view: View | None = None
    message: Message | None = None


class SlashCommand(_Shape):
    """A slash command's form (every value is text; `is_enterprise_install` is "true" / "false")."""

    command: Command
    text: str = ""
    user_id: str
    channel_id: str | None = None
    team_id: str | None = None
    enterprise_id: str | None = None
    response_url: Url
    trigger_id: str | None = None
    api_app_id: str | None = None
    is_enterprise_install: Literal["true", "false"] | None = None


PAYLOADS: dict[str, type[_Shape]] = {
    "event_callback": EventCallback, "url_verification": UrlVerification, "app_rate_limited": AppRateLimited,
    "block_actions": BlockActions, "view_submission": ViewSubmission, "view_closed": ViewClosed,
    "shortcut": GlobalShortcut, "message_action": MessageShortcut,
}


def _first_error(exc: ValidationError) -> str:
    """Where and what, never the value (a hostile value must not reach the log)."""
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "the payload"
    return f"{where[:120]}: {error.get('type', 'invalid')}"


def payload_problem(payload: Any) -> str | None:
    """Why a parsed JSON payload is not in a shape Slack documents for its type, or None."""
    if not isinstance(payload, dict):
        return "the payload is not a JSON object"
    kind = payload.get("type")
    known = kind if isinstance(kind, str) and kind in PAYLOADS else None
    try:
        PAYLOADS[known].model_validate(payload) if known else AnyPayload.model_validate(payload)
    except ValidationError as exc:
        return f"{known or 'payload'} {_first_error(exc)}"  # only our own words: the type may be anything
    return None


def form_problem(form: dict[str, str]) -> str | None:
    """Why a form body (slash command; ssl_check and other forms pass to Bolt) is not in Slack's shape, or None."""
    if "command" not in form:
        return None
    try:
        SlashCommand.model_validate(form)
    except ValidationError as exc:
        return f"slash command {_first_error(exc)}"
    return None
