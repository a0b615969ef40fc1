"""Typed quantities: one extractor for draft text and evidence, matching by kind, declared derivations."""
