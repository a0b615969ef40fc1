"""Alembic migrations of the diagbot schema, shipped inside the package (script_location `core.stores.sql:migrations`).

Each schema change is a new file in versions/ whose `down_revision` is the current head (one linear chain).
"""
