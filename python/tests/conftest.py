"""Shared paths of the ingot Python tests: the project root, the shared fixtures (override with
INGOT_FIXTURES) and the malformed-input corpus."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.environ.get("INGOT_FIXTURES") or os.path.join(ROOT, "..", "shared", "fixtures")
CORPUS = os.path.join(ROOT, "tests", "corpus")


def fixture(*parts):
    p = os.path.join(FIXTURES, *parts)
    if not os.path.exists(p):
        pytest.fail(f"fixture missing: {p} (set INGOT_FIXTURES)")
    return p
