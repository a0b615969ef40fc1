"""A person's 👍/👎 on a run's final message: one vote per user and run (a later vote replaces the earlier)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field


class Vote(StrEnum):
    UP = "up"
    DOWN = "down"


class Stored(StrEnum):
    """What recording a vote changed: a first vote, a changed one, or nothing (the same vote clicked again)."""

    NEW = "new"
    CHANGED = "changed"
    SAME = "same"


class Feedback(BaseModel):
    """One user's vote on one run."""

    run_id: str = Field(max_length=64)
    user: str = Field(max_length=64, description="Slack user id of the voter.")
    team: str = Field(default="", max_length=64)
    vote: Vote
    at: datetime = Field(description="When the vote was cast (or last changed).")


class FeedbackTally(BaseModel):
    """The votes of one run."""

    up: int = 0
    down: int = 0
    votes: list[Feedback] = Field(default_factory=list)
