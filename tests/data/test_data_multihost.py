"""Global batches over real meshes, in fresh processes: 8 fake devices, and 2 jax processes.

Both runs gather their global jax.Arrays and compare them with the numpy batches a single
process builds, so together they show that the batch does not depend on the device or
process layout (data_multihost_main.py does the checking).
"""
import pathlib

from tests.multihost_testing import free_port, launch, result

MAIN = pathlib.Path(__file__).resolve().parent / "data_multihost_main.py"


def test_global_batches_match_on_8_devices_and_on_2_processes():
  port = free_port()
  # Started together: the three processes overlap their start-up.
  single = launch(MAIN, 0, 1, 0, 8, "data=4,fsdp=2", 3)
  pair = [launch(MAIN, i, 2, port, 2, "data=4", 3) for i in range(2)]
  assert result(single) == {"process": 0, "rows": [0, 8], "state": 5}
  # Each process builds only its half of the rows, and both resume from the same state.
  assert [result(p) for p in pair] == [{"process": 0, "rows": [0, 4], "state": 5},
                                        {"process": 1, "rows": [4, 8], "state": 5}]
