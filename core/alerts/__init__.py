"""Alert-triggered investigations (SPEC §10.1): Alertmanager's webhook and alert messages of other Slack apps."""
