"""Block Kit renderers: one module per kind of message, all bounded by `limits`."""
