"""The bundled demo incident, shipped as package data: `data/` (logs, runbooks, shop.db) and `scenarios/`
(recorded model responses of `diagbot demo`); `generate.py` rewrites `data/` deterministically."""
