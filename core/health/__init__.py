"""Configuration and dependency checks: `diagbot check`, the start-up refusal of `diagbot serve`, and readiness."""
