"""Run by test_data_multihost.py in fresh processes: global batches on a CPU mesh.

    python data_multihost_main.py PROCESS_ID NUM_PROCESSES PORT DEVICES_PER_PROCESS MESH START

builds the data pipeline's global jax.Array batches over a mesh of all processes' devices
(MESH: e.g. "data=4,fsdp=2"), gathers them to every host and checks them against the numpy
batches one process builds alone, then the same for the fields placed as one stacked array
(`stacked=True`). Prints one JSON line (this process's rows) on success.
"""
import itertools
import json
import sys

import jax

process_id, num_processes, port, devices, mesh_arg, start = sys.argv[1:]
jax.config.update("jax_num_cpu_devices", int(devices))
if int(num_processes) > 1:
  jax.distributed.initialize(coordinator_address=f"localhost:{port}",
                             num_processes=int(num_processes), process_id=int(process_id))

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top

import data_testing  # pylint: disable=g-import-not-at-top
from nupa_jax import data  # pylint: disable=g-import-not-at-top
from nupa_jax import sharding  # pylint: disable=g-import-not-at-top
from nupa_jax.data import packing  # pylint: disable=g-import-not-at-top

shape = {k: int(v) for k, v in (item.split("=") for item in mesh_arg.split(","))}
mesh = sharding.make_mesh(shape)
pipeline = data.Pipeline(data_testing.config(samples_per_row=4))
run = pipeline.train_iterator(mesh, start_step=int(start))
reference = pipeline.train_iterator(start_step=int(start), process_count=1, process_index=0)
for batch, expected in itertools.islice(zip(run, reference), 2):
  assert batch["num_samples"] == expected["num_samples"] == pipeline.batch_size
  for name, value in expected.items():
    if name == "num_samples":
      continue
    assert isinstance(batch[name], jax.Array) and batch[name].shape == value.shape, name
    assert batch[name].sharding == sharding.batch_sharding(mesh), name
    gathered = multihost_utils.process_allgather(batch[name], tiled=True)
    np.testing.assert_array_equal(np.asarray(gathered), value, err_msg=name)
run.close()
reference.close()
with pipeline.train_iterator(mesh, start_step=int(start), stacked=True) as stacked, \
     pipeline.train_iterator(start_step=int(start), process_count=1, process_index=0) as plain:
  for batch, expected in itertools.islice(zip(stacked, plain), 2):
    value = packing.stack_fields({k: v for k, v in expected.items() if k != "num_samples"})
    array = batch[packing.STACKED]
    assert array.shape == value[packing.STACKED].shape, array.shape
    gathered = multihost_utils.process_allgather(array, tiled=True)
    np.testing.assert_array_equal(np.asarray(gathered), value[packing.STACKED])
rows = pipeline.local_rows(sharding.batch_sharding(mesh))
print(json.dumps({"process": jax.process_index(), "rows": [rows.start, rows.stop],
                  "state": run.state()}))
