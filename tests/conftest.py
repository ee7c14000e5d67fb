"""Shared pytest fixtures: where the official NUPA data lives (skip cleanly when absent)."""
import gzip
import json
import pathlib

import pytest

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared"
OFFICIAL_DATA = SHARED / "official_nupa" / "test_sub100.json.gz"


@pytest.fixture(scope="session")
def official_questions():
  """{official_task_name: {digit(str): [question_and_answer, ...]}} or skip."""
  if not OFFICIAL_DATA.exists():
    pytest.skip(f"official NUPA data not found at {OFFICIAL_DATA} (only in the dev checkout)")
  with gzip.open(OFFICIAL_DATA, "rt") as f:
    return json.load(f)
