"""A small extra toolset that exists only in the tests: `list_deploys`, the deploys of a service.

It is one folder (this one) written against the toolset contract alone (core/tools/contract.py), registered by one
line (`REGISTRY.with_toolsets(DeploysToolset(...))` in the test), and nothing else in the code names it: the proof
that the next evidence source is one folder (issue 18)."""
