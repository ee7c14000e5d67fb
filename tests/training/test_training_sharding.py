"""FSDP runs data parallel: parameters travel between devices, activations do not.

Left to itself, GSPMD propagates the parameters' FSDP sharding (on `embed`) into the
activations and splits layers over features, all-gathering whole-batch activations between
them; that cost 40% of the per-GPU throughput on 2 H100s. `sharding.constrain` pins the
activations to the batch split; this checks the compiled program's communication.
"""
import json

import pytest

import training_testing


MESHES = ("fsdp", "zero1", "data")


@pytest.fixture(scope="module")
def collectives() -> dict[str, dict]:
  """fsdp_collectives_main.py's reports of the train step compiled on 2 fake devices, one per
  mesh of MESHES: made by one process, which starts and imports once for all of them."""
  result = training_testing.run_script("fsdp_collectives_main.py", list(MESHES), devices=2)
  return dict(zip(MESHES, map(json.loads, result.stdout.splitlines()), strict=True))


def test_fsdp_step_gathers_parameters_and_never_whole_batch_activations(collectives):
  report = collectives["fsdp"]
  rows, seq_len = report["rows"], report["seq_len"]
  ops = [(op, shape) for op, shapes in report["collectives"] for shape in shapes]
  activation_sized = [(op, s) for op, s in ops if len(s) >= 2 and s[:2] in (
      [rows, seq_len], [rows // 2, seq_len], [1, rows // 2, seq_len])]
  # The one exception: the embedding lookup's output, all-to-all'ed once from the table's
  # embed split to the batch split (an [rows, seq_len, 1] id gather on the way back).
  assert all(op == "all-to-all" or s[2:] in ([], [1]) for op, s in activation_sized), \
      activation_sized
  gathered = [s for op, s in ops if op == "all-gather" and len(s) == 2]
  assert gathered, "no parameter all-gathers: the parameters are not FSDP-sharded"


def test_optimizer_over_data_updates_shards_and_gathers_the_new_parameters(collectives):
  """Data parallel with `mesh.shard_optimizer_over_data`: each device updates its half of the
  parameters (with its half of the moments) and the step all-gathers the updated parameters;
  without the option a data-parallel step gathers no parameter."""
  def parameter_gathers(report):
    return [s for op, shapes in report["collectives"] for s in shapes
            if op == "all-gather" and len(s) >= 2 and s[:2] != [report["rows"], report["seq_len"]]
            and s[:1] != [report["rows"]]]

  assert parameter_gathers(collectives["zero1"])
  assert not parameter_gathers(collectives["data"])
