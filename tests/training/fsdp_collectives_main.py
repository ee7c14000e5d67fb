"""Prints, as JSON, the collectives of the compiled train step of the micro config on a mesh.

    fsdp_collectives_main.py [fsdp|data|zero1]

`fsdp` (default): parameters split over fsdp; `data`: data parallel; `zero1`: data parallel
with the optimizer state split over data (`mesh.shard_optimizer_over_data`). Run in a
subprocess with 2 fake CPU devices (test_training_sharding.py): the device count must be fixed
before jax initialises. Output: {"rows", "seq_len", "collectives": [[op, [shape, ...]], ...]}
with every array operand's shape of every collective in the optimized HLO.
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


def main(mesh_name: str) -> None:
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
  collectives = []
  for line in hlo.splitlines():
    match = COLLECTIVE.search(line)
    if match:
      shapes = [[int(d) for d in dims.split(",") if d] for dims in SHAPE.findall(match.group(1))]
      collectives.append([match.group(2), shapes])
  json.dump({"rows": pipeline.rows, "seq_len": pipeline.seq_len,
             "collectives": collectives}, sys.stdout)


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else "fsdp")
