"""config.data.num_workers: the auto rule on fake device and CPU counts, explicit counts
passed through, and the old run configs that set it by hand."""
import json
import pathlib

import ml_collections
import pytest

import data_testing
from nupa_jax import data
from nupa_jax import settings as nupa_settings
from nupa_jax.data import settings
from nupa_jax.data import workers

ROOT = pathlib.Path(__file__).resolve().parents[2]


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
