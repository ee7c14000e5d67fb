"""Shared pytest fixtures: the official NUPA questions, read from NUPA_OFFICIAL_DATA.

The official question file (docs/official_data.md) is not part of the repository; point
NUPA_OFFICIAL_DATA at a copy of it to run the conformance tests, which skip otherwise.
"""
import gzip
import json
import os
import pathlib

import pytest

OFFICIAL_DATA_VARIABLE = "NUPA_OFFICIAL_DATA"


@pytest.fixture(scope="session")
def official_questions():
  """{official_task_name: {digit(str): [question_and_answer, ...]}} or skip."""
  path = os.environ.get(OFFICIAL_DATA_VARIABLE)
  if not path:
    pytest.skip(f"{OFFICIAL_DATA_VARIABLE} unset: set it to the official test_sub100.json.gz "
                "(docs/official_data.md) to run the conformance tests")
  if not pathlib.Path(path).is_file():
    pytest.fail(f"{OFFICIAL_DATA_VARIABLE}={path} is not a file: point it at the official "
                "test_sub100.json.gz or unset it")
  with gzip.open(path, "rt") as f:
    return json.load(f)
