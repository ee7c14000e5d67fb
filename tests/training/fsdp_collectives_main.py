"""Prints, as JSON, the collectives of the compiled train step of the micro config on a mesh.

    fsdp_collectives_main.py [MESH ...]

MESH `fsdp` (the default when none is named): parameters split over fsdp; `data`: data
parallel; `zero1`: data parallel with the optimizer state split over data
(`mesh.shard_optimizer_over_data`). Run in a subprocess with 2 fake CPU devices
(test_training_sharding.py): the device count must be fixed before jax initialises. Output:
a line {"rows", "seq_len", "collectives": [[op, [shape, ...]], ...]} for each MESH named, in
order, with every array operand's shape of every collective in the optimized HLO.
"""
import json
import re
import sys

import jax

import training_testing
from nupa_jax import data as data_lib
from nupa_jax import sharding
from nupa_jax.training import optimizer
from nupa_jax.models import state as state_lib
from nupa_jax.training import step as step_lib

COLLECTIVE = re.compile(r"= (.+?) (all-gather|all-reduce|reduce-scatter|all-to-all|"
                        r"collective-permute)(?:-start)?\(")
SHAPE = re.compile(r"[a-z0-9]+\[([0-9,]*)\]")
MESHES = {
    "fsdp": {"mesh.shape": {"data": 1, "fsdp": -1, "tensor": 1}},
    "data": {"mesh.shape": {"data": -1, "fsdp": 1, "tensor": 1}},
    "zero1": {"mesh.shape": {"data": -1, "fsdp": 1, "tensor": 1},
              "mesh.shard_optimizer_over_data": True},
}


def collectives(mesh_name: str) -> dict:
  config = training_testing.micro_config(**MESHES[mesh_name], **{"model.num_layers": 2})
  mesh = sharding.make_mesh(config.mesh.shape)
  pipeline = data_lib.Pipeline(config)
  tx = optimizer.make(config.train)
  spec = state_lib.spec(config.model, pipeline.encoder.vocab_size, mesh, config.mesh.rules,
                        tx=tx, optimizer_over_data=sharding.optimizer_over_data(config))
  batch_sh = sharding.batch_sharding(mesh)
  train_step = step_lib.make_train_step(spec.graphdef, spec.shardings, batch_sh,
                                        sharding.replicated(mesh), optimizer.schedule(config.train),
                                        grad_shardings=spec.grad_shardings)
  state = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                       spec.abstract, spec.shardings)
  with pipeline.train_iterator(None, 0) as batches:
    batch = step_lib.device_batch(next(batches))
  batch = {k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=batch_sh) for k, v in batch.items()}
  with jax.set_mesh(mesh):
    hlo = train_step.lower(state, batch).compile().as_text()
  found = []
  for line in hlo.splitlines():
    match = COLLECTIVE.search(line)
    if match:
      shapes = [[int(d) for d in dims.split(",") if d] for dims in SHAPE.findall(match.group(1))]
      found.append([match.group(2), shapes])
  return {"rows": pipeline.rows, "seq_len": pipeline.seq_len, "collectives": found}


if __name__ == "__main__":
  for name in sys.argv[1:] or ["fsdp"]:
    print(json.dumps(collectives(name)))
