"""Over-redaction: 400 real-looking identifiers (tests/corpus/identifiers.txt) come through redaction unchanged.

Mixed-case Kubernetes object refs (Pod/payments-api-7f9dd8b6c4-x7gr9, ReplicaSet/...), UUIDs, W3C trace ids, image
tags and digests, commits, ARNs, Azure resource ids, Java frames, ULIDs, request ids, S3 keys, topics, kubelet paths:
an engineer needs each of them, and none is a secret. The real secrets beside them are still found (the last test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evidence.identifiers import is_identifier
from core.evidence.redaction import redact

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "identifiers.txt"
LINES = [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def test_the_corpus_is_large_enough() -> None:
    assert len(LINES) >= 200


@pytest.mark.parametrize("line", LINES)
def test_identifier_comes_through_unchanged(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize(
    "token",
    ["Pod/payments-api-7f9dd8b6c4-x7gr9", "ReplicaSet/checkout-web-5d8c7b9f4d", "PaymentsApiDeploymentV2ReplicaSet",
     "resourceGroups/rg-shop-prod/providers/Microsoft.Compute", "OrderServiceApplicationKt"],
)
def test_word_like_parts_make_an_identifier(token: str) -> None:
    assert is_identifier(token)


@pytest.mark.parametrize(
    "token",
    ["wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY9", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", "Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0",
     "kX9-mQ2_pL7vB4nR8sT1wY6zA3cF5hJ0", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
)
def test_random_tokens_are_not_identifiers(token: str) -> None:
    """A random token's parts mix cases and digits inside: not word-like, so the entropy rule still hides it."""
    assert not is_identifier(token)
    assert token not in redact(f"value {token} end")
