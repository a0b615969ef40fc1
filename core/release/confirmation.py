"""Which published actions need a human's confirmation: decided here, deterministically, never by the model's flag.

An action is exempt only when it does nothing but collect more evidence (check, query, look at, compare...) and names
no change. Anything else needs confirmation, and an action that changes a system (deploy, rollback, restart, scaling,
DDL/DML, deletion, configuration...) always does, whatever `requires_human_confirmation` the draft set (SPEC §5).
"""

from __future__ import annotations

import re

from core.contracts.draft import Action, DiagnosisDraft

# Verbs and commands that change a system. Any occurrence counts, so "check, then restart" needs confirmation.
_CHANGES = re.compile(
    r"(?i)\b(?:re-?deploy(?:s|ed|ing|ment)?|deploy(?:s|ed|ing)?|roll(?:s|ed|ing)?[\s-]?back|rollbacks?|revert(?:s|ed|ing)?"
    r"|re-?start(?:s|ed|ing)?|start(?:s|ed|ing)?|stop(?:s|ped|ping)?|reboot(?:s|ed|ing)?|bounce|recycle|kill(?:s|ed|ing)?"
    r"|terminate|shut\s*down|scal(?:e|es|ed|ing)|autoscal\w*|resize|drop(?:s|ped|ping)?|delete|deleting|remove|removing"
    r"|truncate|purge|flush|wipe|clear|alter|update|insert|upsert|replace|create|grant|revoke|migrate|migration"
    r"|patch|upgrade|downgrade|install|uninstall|disable|enable|apply|change|modify|set|unset|increase|decrease|raise"
    r"|lower|bump|rotate|reset|fail\s*over|promote|demote|cordon|uncordon|drain|evict|reindex|rebuild|vacuum|optimize"
    r"|reconfigure|configure|edit|rename|move|restore|resubmit|retry|replay|refund|cancel|block|unblock|throttle"
    r"|rate[\s-]?limit|commit|merge|push|release|publish|kubectl|helm|terraform|systemctl|service\s+\S+\s+(?:re)?start"
    r"|chmod|chown|mv|rm|sudo)\b"
)
# What an evidence-only action starts with.
_COLLECTS = re.compile(
    r"(?i)^\W*(?:please\s+)?(?:check|inspect|look(?:\s+(?:at|into|for))?|review|query|search|grep|collect|gather|compare"
    r"|monitor|watch|read|view|list|show|describe|explain|examine|investigate|trace|correlate|measure|capture|confirm"
    r"|verify|find|identify|count|graph|plot|open|export|fetch|pull|get|ask|consult|see|analy[sz]e|profile|sample"
    r"|audit|determine|estimate|locate|run\s+(?:a\s+|the\s+)?(?:read-only\s+)?(?:select|query|explain|lookup_knowledge"
    r"|query_logs|query_mysql))\b"
)


def changes_system(text: str) -> bool:
    """True when the text names a change to a system (a deploy, restart, DDL/DML, deletion, scaling, config...)."""
    return _CHANGES.search(text) is not None


def collects_evidence_only(text: str) -> bool:
    """True when the text only asks for more evidence (starts like "check ..." and names no change)."""
    return _COLLECTS.match(text) is not None and not changes_system(text)


def needs_confirmation(action: Action) -> bool:
    """Whether the published action is shown as requiring human confirmation."""
    return action.requires_human_confirmation or not collects_evidence_only(action.action)


def with_confirmations(draft: DiagnosisDraft) -> DiagnosisDraft:
    """The draft as it is published: every action's confirmation flag decided by `needs_confirmation`."""
    actions = [a.model_copy(update={"requires_human_confirmation": needs_confirmation(a)}) for a in draft.action_plan]
    return draft.model_copy(update={"action_plan": actions})
