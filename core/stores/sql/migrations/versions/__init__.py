"""Migration scripts, oldest first by revision id (alembic reads the chain from `down_revision`)."""
