"""The chat service: turns, sessions, run context and timeline."""
