"""Contracts: the pydantic models that cross component boundaries (and become JSON schemas the model sees)."""
