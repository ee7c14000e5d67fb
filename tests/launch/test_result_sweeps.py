"""The experiments' sweep files: the queued ones build their runs' configs (launch/sweep.py
refuses a recipe the config family rejects) and print the commands a GPU job would run; every
one names its recipe as config arguments, overriding only how a run executes."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


RFCOT_RECIPE = ("tokenizer=digits,context=4096,samples=179200,lr=1e-3,warmup=70,per_length=20,"
                "cells=table")


@pytest.mark.parametrize("experiment, runs, expected", [
    ("generalist", 1, ["configs/mixed.py:size=100m,samples=14000000,per_length=100,scoring=paper,"
                       "eval_every=0",
                       "--config.data.num_workers=32"]),
    ("rfcot", 2, [f"{RFCOT_RECIPE},answer=rfcot", f"{RFCOT_RECIPE},answer=direct"]),
])
def test_sweep_prints_valid_commands(tmp_path, experiment, runs, expected):
  result = subprocess.run(
      ["bash", str(RESULTS / experiment / "sweep.sh"), str(tmp_path / "sweep"), "--runner",
       "print"], env=dict(os.environ, PYTHON=sys.executable, JAX_PLATFORMS="cpu"),
      capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  commands = result.stdout.strip().splitlines()
  assert len(commands) == runs
  for text in expected:
    assert any(text in c for c in commands), (text, commands)
  assert all("-m nupa_jax.train" in c for c in commands)


# Overrides that change how a run executes, never what it computes or reports.
EXECUTION_FIELDS = ("checkpoint.", "data.num_workers", "eval.batch_size")
# Config fields a sweep loops over as grid keys, each kept for the names of published runs.
GRID_FIELDS = {"beyond/sweep_longer.sh": ["train.steps"]}
SECTIONS = "train|eval|data|model|text|mesh|checkpoint"


@pytest.mark.parametrize("script", sorted(RESULTS.glob("**/*.sh")), ids=lambda p: str(
    p.relative_to(RESULTS)))
def test_sweep_files_name_recipes_as_config_arguments(script):
  """A recipe field set by a `--config.` override or a dotted grid key fails here."""
  code = "\n".join(line for line in script.read_text().splitlines()
                   if not line.lstrip().startswith("#"))
  overrides = re.findall(r"--config\.([\w.]+)=", code)
  assert [o for o in overrides if not o.startswith(EXECUTION_FIELDS)] == [], (
      f"{script}: put the recipe in the config's arguments, not in --config overrides")
  grid_fields = re.findall(rf"(?<![\w.-])((?:{SECTIONS})\.[\w.]+)=", code)
  assert grid_fields == GRID_FIELDS.get(str(script.relative_to(RESULTS)), []), script
