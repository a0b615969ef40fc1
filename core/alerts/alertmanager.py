"""Alertmanager's webhook payload, version 4, as its documentation gives it (prometheus.io, `webhook_config`):

    {"version": "4", "groupKey": <string>, "truncatedAlerts": <int>, "status": "<resolved|firing>",
     "receiver": <string>, "groupLabels": <object>, "commonLabels": <object>, "commonAnnotations": <object>,
     "externalURL": <string>,
     "alerts": [{"status": "<resolved|firing>", "labels": <object>, "annotations": <object>,
                 "startsAt": "<rfc3339>", "endsAt": "<rfc3339>", "generatorURL": <string>,
                 "fingerprint": <string>}, ...]}

Validated strictly where we act on a field (version, status, groupKey, the alerts' identity and times), leniently
for fields Alertmanager may add later (ignored). Labels and annotations are strings to strings, bounded.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_BODY_BYTES = 1024 * 1024  # SPEC §10.1: larger bodies get 413
MAX_ALERTS = 1000  # Alertmanager's max_alerts is unlimited by default; a group this big is summarised, never listed
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)  # Go's zero time: "endsAt" of an alert still firing

Name = Annotated[str, StringConstraints(max_length=1024)]
Value = Annotated[str, StringConstraints(max_length=16 * 1024)]
Labels = Annotated[dict[Name, Value], Field(max_length=256)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Alert(_Model):
    """One alert of the group."""

    status: Literal["firing", "resolved"]
    labels: Labels = Field(default_factory=dict)
    annotations: Labels = Field(default_factory=dict)
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime = Field(default=ZERO_TIME, alias="endsAt")
    generator_url: Annotated[str, StringConstraints(max_length=8192)] = Field(default="", alias="generatorURL")
    fingerprint: Annotated[str, StringConstraints(min_length=1, max_length=64)]

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "unnamed alert")

    @property
    def ended(self) -> datetime | None:
        """When it resolved (None while firing: Alertmanager sends Go's zero time or a future end)."""
        return None if self.status == "firing" or self.ends_at <= ZERO_TIME else self.ends_at


class AlertGroup(_Model):
    """One webhook notification: a group of alerts (`groupKey`) and whether it fires or resolved."""

    version: Literal["4"]
    group_key: Annotated[str, StringConstraints(min_length=1, max_length=8192)] = Field(alias="groupKey")
    truncated_alerts: int = Field(default=0, ge=0, alias="truncatedAlerts")
    status: Literal["firing", "resolved"]
    receiver: Annotated[str, StringConstraints(max_length=1024)] = ""
    group_labels: Labels = Field(default_factory=dict, alias="groupLabels")
    common_labels: Labels = Field(default_factory=dict, alias="commonLabels")
    common_annotations: Labels = Field(default_factory=dict, alias="commonAnnotations")
    external_url: Annotated[str, StringConstraints(max_length=8192)] = Field(default="", alias="externalURL")
    alerts: list[Alert] = Field(min_length=1, max_length=MAX_ALERTS)

    @property
    def firing(self) -> list[Alert]:
        return [a for a in self.alerts if a.status == "firing"]

    @property
    def resolved(self) -> list[Alert]:
        return [a for a in self.alerts if a.status == "resolved"]
