"""Evidence: the ToolBoundary, bounded projections and secret redaction."""
