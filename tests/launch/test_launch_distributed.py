"""When nupa_jax.distributed initialises JAX's multi-process runtime, and with what.

`resolve` reads flags and an environment and touches no device, so every launcher's variables
can be checked here with hand-written environments; joining real processes is
test_launch_local.py's job.
"""
import pytest
from absl import flags

from nupa_jax import distributed
from nupa_jax.distributed import Settings

# What `srun --ntasks=4` puts in the environment of its task 2 (the variables JAX reads).
SLURM_STEP = {"SLURM_JOB_ID": "4242", "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_NTASKS": "4",
              "SLURM_PROCID": "2", "SLURM_LOCALID": "0"}
LOCAL_SH = {"JAX_COORDINATOR_ADDRESS": "localhost:1234", "JAX_NUM_PROCESSES": "2",
            "JAX_PROCESS_ID": "1"}


def resolve(*args, env=None, **kwargs):
  return distributed.resolve(*args, environ=env or {}, **kwargs)


def test_nothing_given_is_a_single_process():
  assert resolve() is None


def test_explicit_flags():
  assert resolve("10.0.0.1:8476", 4, 3) == Settings("explicit", "10.0.0.1:8476", 4, 3)


def test_environment_variables_as_local_sh_sets_them():
  assert resolve(env=LOCAL_SH) == Settings("explicit", "localhost:1234", 2, 1)


def test_flags_override_environment():
  assert resolve(process_id=0, env=LOCAL_SH) == Settings("explicit", "localhost:1234", 2, 0)


def test_one_process_needs_no_initialisation_even_under_a_launcher():
  assert resolve(num_processes=1, env=SLURM_STEP) is None
  assert resolve(env={**LOCAL_SH, "JAX_NUM_PROCESSES": "1", "JAX_PROCESS_ID": "0"}) is None


def test_explicit_settings_win_over_a_detected_launcher():
  # local.sh started inside a SLURM allocation: its own variables, not SLURM's, describe the run.
  assert resolve(env={**SLURM_STEP, **LOCAL_SH}) == Settings("explicit", "localhost:1234", 2, 1)


def test_srun_step_is_left_to_jax_detection_with_given_values_kept():
  assert resolve(env=SLURM_STEP) == Settings("slurm")
  assert resolve(env={**SLURM_STEP, "JAX_COORDINATOR_ADDRESS": "gpu07:9999"}) == Settings(
      "slurm", "gpu07:9999")


def test_slurm_batch_step_or_single_task_is_one_process():
  batch_script = {k: v for k, v in SLURM_STEP.items() if k != "SLURM_STEP_NODELIST"}
  assert resolve(env=batch_script) is None
  assert resolve(env={**SLURM_STEP, "SLURM_NTASKS": "1", "SLURM_PROCID": "0"}) is None


def test_mpirun():
  mpirun = {"OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1:34911",
            "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_RANK": "5"}
  assert resolve(env=mpirun) == Settings("openmpi")
  assert resolve(env={**mpirun, "OMPI_COMM_WORLD_SIZE": "1"}) is None


def test_partial_settings_without_a_launcher_name_what_is_missing():
  with pytest.raises(ValueError, match=r"--coordinator_address, --process_id missing"):
    resolve(num_processes=2)
  with pytest.raises(ValueError, match=r"--num_processes missing"):
    resolve(env={"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_PROCESS_ID": "0"})


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_processes=2, process_id=2), r"--process_id=2 is outside \[0, 2\)"),
    (dict(num_processes=0), r"--num_processes=0: expected a positive"),
])
def test_bad_values(kwargs, message):
  with pytest.raises(ValueError, match=message):
    resolve("h:1", **kwargs)


def test_non_integer_environment_value():
  with pytest.raises(ValueError, match=r"JAX_NUM_PROCESSES='two': expected an integer"):
    resolve(env={**LOCAL_SH, "JAX_NUM_PROCESSES": "two"})


def test_flags_reach_resolve():
  values = flags.FlagValues()
  distributed.define_flags(values)
  values(["prog", "--coordinator_address=h:5", "--num_processes=3", "--process_id=2"])
  assert (values.coordinator_address, values.num_processes, values.process_id) == ("h:5", 3, 2)


def test_define_flags_twice_is_harmless():
  values = flags.FlagValues()
  distributed.define_flags(values)
  distributed.define_flags(values)  # both entry points imported into one process
  values(["prog", "--num_processes=1"])
  assert values.num_processes == 1
