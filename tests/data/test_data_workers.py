"""config.data.num_workers: the auto rule on fake device and CPU counts, explicit counts
passed through, the old run configs that set it by hand, and workers that die as they start
(an error within seconds, not a hang)."""
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import ml_collections
import numpy as np
import pytest

import data_testing
from nupa_jax import data
from nupa_jax import settings as nupa_settings
from nupa_jax import sharding
from nupa_jax.data import pipeline as pipeline_lib
from nupa_jax.data import settings
from nupa_jax.data import workers

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.parametrize("accelerators, cpus, expected", [
    (0, 2, 0),     # CPU-only: generate in the training process
    (0, 128, 0),
    (1, 16, 6),    # one GPU: 6 workers
    (2, 16, 12),
    (4, 16, 15),   # 24 wanted, 16 CPUs - 1 for the training process
    (8, 128, 48),
    (1, 4, 3),     # 6 wanted, 3 CPUs left
    (1, 1, 0),     # no CPU left beside the training process
])
def test_auto_count_gives_six_per_accelerator_within_the_spare_cpus(accelerators, cpus,
                                                                   expected):
  assert workers.auto_count(accelerators, cpus) == expected


def _fake_host(monkeypatch, accelerators: int, cpus: int) -> None:
  monkeypatch.setattr(workers, "local_accelerators", lambda: accelerators)
  monkeypatch.setattr(workers, "available_cpus", lambda: cpus)


def test_auto_reads_the_devices_and_cpus_of_the_process(monkeypatch):
  _fake_host(monkeypatch, accelerators=2, cpus=8)
  assert workers.resolve(workers.AUTO) == 7
  _fake_host(monkeypatch, accelerators=1, cpus=16)
  assert workers.resolve(workers.AUTO) == 6


@pytest.mark.parametrize("requested", [0, 1, 3, 40])
def test_explicit_counts_pass_through(monkeypatch, requested):
  _fake_host(monkeypatch, accelerators=4, cpus=64)
  assert workers.resolve(requested) == requested


def test_available_cpus_is_the_affinity_mask(monkeypatch):
  monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 5, 9}, raising=False)
  assert workers.available_cpus() == 3


def test_the_default_is_auto_and_a_cpu_process_resolves_it_to_zero():
  assert data.defaults().num_workers == workers.AUTO
  pipeline = data.Pipeline(data_testing.config())  # this test process: CPU devices only
  assert pipeline.settings.num_workers == workers.AUTO
  assert pipeline.num_workers == 0
  assert data.describe(pipeline)["num_workers"] == 0


def test_the_pipeline_resolves_auto_from_the_host(monkeypatch):
  _fake_host(monkeypatch, accelerators=1, cpus=16)
  assert data.Pipeline(data_testing.config()).num_workers == 6
  assert data.Pipeline(data_testing.config(num_workers=2)).num_workers == 2


def test_an_old_run_config_with_explicit_workers_still_loads():
  saved = json.loads((ROOT / "docs/results/tokenizers/runs/tok-2/config.json").read_text())
  assert saved["data"]["num_workers"] == 6
  config = nupa_settings.upgrade(ml_collections.ConfigDict(saved))  # as a saved run is read
  assert settings.Settings.from_config(config).num_workers == 6


def test_negative_counts_other_than_auto_are_refused():
  with pytest.raises(ValueError, match=r"num_workers must be >= 0 or -1 \(auto"):
    data.Pipeline(data_testing.config(num_workers=-2))


def test_dead_children_reads_exit_statuses_and_leaves_them_to_the_parent():
  exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
  killed = subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
  for child in (exited, killed):  # wait for each to end without collecting it
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
  statuses = workers.dead_children()
  assert statuses[exited.pid] == 3 and statuses[killed.pid] == -9
  assert (exited.wait(), killed.wait()) == (3, -9)  # still there for their Popen to collect
  assert exited.pid not in workers.dead_children()


def test_live_workers_pass_the_check_of_a_late_batch(monkeypatch):
  monkeypatch.setattr(pipeline_lib, "_LATE_SECONDS", 0.05)  # checked often as the worker starts
  checks = []
  check = workers.check_workers
  monkeypatch.setattr(workers, "check_workers", lambda known: checks.append(check(known)))
  pipeline = data.Pipeline(data_testing.config(num_workers=1))
  with pipeline.train_iterator(sharding.make_mesh({"data": 1})) as placed, \
       pipeline.train_iterator(num_workers=0) as serial:
    for _ in range(2):
      a, b = next(placed), next(serial)
      for name in b:
        np.testing.assert_array_equal(np.asarray(a[name]), b[name], err_msg=name)
  assert checks  # the worker took longer than 0.05 s to start, and was found alive


@pytest.mark.parametrize("device_prefetch", [2, 0])
def test_workers_that_die_as_they_start_end_the_iterator_in_seconds(device_prefetch):
  """workers_died_main.py fails the import of itself that a spawned worker does first. grain
  alone would wait for the batch forever (its Process.start() stays blocked writing the
  pickled batcher, more than a pipe holds, to the dead worker: data/workers.py); the
  iterator's check finds the dead worker and raises WorkersDied instead, and closes: whether
  batches are placed ahead or only when asked. The process then ends with one line, status 1,
  and no traceback of grain's exit handler below it."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT)]),
             JAX_PLATFORMS="cpu")
  try:
    run = subprocess.run([sys.executable, str(HERE / "workers_died_main.py"), "1",
                          str(device_prefetch)], cwd=HERE,
                         env=env, capture_output=True, text=True, timeout=90)
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"the first batch of a pipeline whose worker died hung: {e}")
  assert run.returncode == 1, run.stderr[-3000:]
  result = json.loads(run.stdout.strip().splitlines()[-1])
  assert result["batcher_bytes"] > 64 * 1024  # more than a pipe holds
  assert result["error"].startswith(
      "WorkersDied: 1 child process(es) of this process died (exit status 1) while it waited "
      "for a batch of its grain workers"), result["error"]
  assert f"main module, {HERE / 'workers_died_main.py'}, again" in result["error"]
  # The worker's own error, which the message points to, is on stderr.
  assert "ImportError: workers_died_main.py cannot be imported in a worker" in run.stderr
  before, line, after = run.stderr.rpartition("data workers died: ")
  assert line and after.startswith("1 child process(es) of this process died")
  assert "Traceback" not in after, after[-3000:]


def test_a_thread_without_read_ahead_makes_each_batch_only_when_asked():
  """device_prefetch 0 with workers: the thread that lets a late batch be checked makes
  nothing ahead of the loop."""
  made = []
  prefetch = pipeline_lib._Prefetch(lambda: made.append(len(made)) or len(made), 0,
                                    check=lambda: None)
  try:
    time.sleep(0.3)
    assert not made
    assert [prefetch.next(), prefetch.next()] == [1, 2]
    time.sleep(0.3)
    assert made == [0, 1]
  finally:
    prefetch.close()
  assert not prefetch._thread.is_alive()


def test_children_dead_before_the_iterator_began_are_not_its_workers():
  child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(4)"])
  os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
  try:
    workers.check_workers(known={child.pid})  # dead before: not reported
    with pytest.raises(workers.WorkersDied, match=r"exit status 4\)"):
      workers.check_workers()
  finally:
    child.wait()


def test_next_on_a_closed_thread_fails_instead_of_waiting():
  prefetch = pipeline_lib._Prefetch(lambda: 1, 0, check=lambda: None)
  assert prefetch.next() == 1
  prefetch.close()
  with pytest.raises(RuntimeError, match="closed batch iterator"):
    prefetch.next()


def test_a_thread_still_making_a_batch_after_close_is_left_to_the_process(monkeypatch):
  """Grain's own close() under a thread still inside its next() would fail: the iterator
  leaves such a thread (marked stuck) to end with the process."""
  monkeypatch.setattr(pipeline_lib, "_JOIN_SECONDS", 0.1)
  release = threading.Event()
  prefetch = pipeline_lib._Prefetch(lambda: release.wait() or 1, 1)
  time.sleep(0.1)
  prefetch.close()
  assert prefetch.stuck
  release.set()
  prefetch._thread.join(timeout=5)
  assert not prefetch._thread.is_alive()
