"""The system prompts (`*.md`, one per model call), shipped as package data and read by core.llm.prompts."""
