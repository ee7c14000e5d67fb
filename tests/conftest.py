"""Shared pytest set-up: CPU compiles without LLVM's optimisations, one compilation cache for
the tests and the processes they start, and the official NUPA questions, read from
NUPA_OFFICIAL_DATA.

The official question file (docs/official_data.md) is not part of the repository; point
NUPA_OFFICIAL_DATA at a copy of it to run the conformance tests, which skip otherwise.
"""
import atexit
import gzip
import json
import os
import pathlib
import shutil
import tempfile

import pytest

OFFICIAL_DATA_VARIABLE = "NUPA_OFFICIAL_DATA"

# Every program the tests compile on the CPU, in this process and in the runs it starts, skips
# LLVM's optimisations: they roughly double compile times, which dominate the suite, and no
# test checks a value they change (XLA's own HLO passes still run). Set here, before jax is
# imported; an optimisation level given in XLA_FLAGS is kept.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = " ".join(
      filter(None, (os.environ.get("XLA_FLAGS"), "--xla_backend_optimization_level=0")))

# The tests and the processes they start (trainers, sweeps, benchmarks) share one persistent
# compilation cache for the whole test run: a program that several tests build (one model, one
# config) is compiled once. Tests that count compilations still see each one: jax's
# `backend_compile_duration` event times the request, a cache hit included. The run's first
# process (pytest-xdist's controller, which loads this file before it starts the workers) makes
# the folder and removes it at exit; the workers and their children inherit the variable.
# A JAX_COMPILATION_CACHE_DIR already set is used as it is, with its own settings, and kept.
# An entry cut short (a process killed as it writes, or two writing one entry at once: jax
# writes in place) costs the processes that read it a warning and a compile of their own, not a
# wrong program: jax falls back when it cannot load.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
  _CACHE = tempfile.mkdtemp(prefix="nupa_jax_tests_xla_")
  os.environ.update(JAX_COMPILATION_CACHE_DIR=_CACHE,
                    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                    JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
  atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


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
