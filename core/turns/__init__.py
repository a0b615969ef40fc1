"""The one turn lifecycle (SPEC §10): a user message or an alert becomes a queued job, a worker runs it, its final
message goes out once. Slack is behind the `TurnSurface` port (bot/slack_surface.py implements it)."""
