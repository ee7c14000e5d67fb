"""Run by test_local_launcher.py through launch/local.sh: one multi-process job on CPU.

    launch/local.sh -n N -d D -m cross_process_sum -- [sum|fail]

Each process joins the others through `nupa_jax.distributed.initialize()` (from the variables
local.sh sets), contributes `process_index + 1` on each of its devices to one global array and
sums it with a jitted reduction over all processes' devices. Prints one JSON line. With
`fail`, process 1 dies after joining, so process 0 waits in the collective until stopped.
"""
import json
import sys

from nupa_jax import distributed

settings = distributed.initialize(initialization_timeout=60)

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position
import jax.numpy as jnp  # pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
from jax.sharding import AxisType, NamedSharding, PartitionSpec  # pylint: disable=g-import-not-at-top,wrong-import-position

if sys.argv[1:] == ["fail"] and jax.process_index() == 1:
  raise RuntimeError("process 1 fails on purpose")
mesh = jax.make_mesh((jax.device_count(),), ("devices",), axis_types=(AxisType.Auto,))
local = np.full(jax.local_device_count(), jax.process_index() + 1, np.int32)
values = jax.make_array_from_process_local_data(
    NamedSharding(mesh, PartitionSpec("devices")), local)
total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, PartitionSpec()))(values)
print(json.dumps({"process": jax.process_index(), "processes": jax.process_count(),
                  "devices": jax.device_count(), "sum": int(total),
                  "source": settings and settings.source}))
