"""data_wait_fraction: the meter's arithmetic on a fake clock, its one warning, and the field in
every train_metrics.jsonl line and console line of a real (tiny, CPU) run; the data counts
(redraws, padding) of each line against the pipeline's own."""
import json

import pytest

from nupa_jax import data
from nupa_jax.training import data_wait

import training_testing


class FakeClock:
  def __init__(self):
    self.now = 100.0

  def __call__(self) -> float:
    return self.now


def slow_batches(clock: FakeClock, waits: list[float]):
  """Batches 0, 1, ... each taking the next of `waits` seconds of the fake clock."""
  for i, wait in enumerate(waits):
    clock.now += wait
    yield i


def meter(warnings: list[str] | None = None, clock=None) -> data_wait.DataWait:
  return data_wait.DataWait(clock=clock or FakeClock(),
                            warn=(warnings if warnings is not None else []).append)


def test_fraction_is_the_time_in_next_over_the_interval():
  clock = FakeClock()
  wait = meter(clock=clock)
  batches = slow_batches(clock, [0.25, 0.5, 0.0, 1.0])
  assert [wait.next(batches), wait.next(batches)] == [0, 1]
  clock.now += 4.0  # steps: time outside next() is not waiting
  assert wait.interval(5.0) == pytest.approx(0.75 / 5.0)
  assert wait.next(batches) == 2
  assert wait.interval(2.0) == 0.0  # the count restarts with each interval
  wait.next(batches)
  assert wait.interval(0.5) == 1.0  # clipped: a wait longer than the interval's training time
  assert wait.interval(0.0) == 0.0


def test_the_end_of_the_batches_is_passed_on_and_its_wait_counted():
  clock = FakeClock()
  wait = meter(clock=clock)

  def empty():
    clock.now += 2.0
    return
    yield  # pylint: disable=unreachable

  with pytest.raises(StopIteration):
    wait.next(empty())
  assert wait.interval(8.0) == pytest.approx(0.25)


def _warnings_for(fractions: list[float]) -> list[str]:
  """The warnings of a meter whose intervals wait `fractions` of 10 s each."""
  clock, warnings = FakeClock(), []
  wait = meter(warnings, clock)
  for fraction in fractions:
    wait.next(slow_batches(clock, [10.0 * fraction]))
    assert wait.interval(10.0) == pytest.approx(fraction)
  return warnings


def test_warns_once_when_the_wait_stays_above_ten_percent_after_the_first_interval():
  assert _warnings_for([0.9, 0.5]) == []  # the first interval (compile, start-up) does not count
  assert _warnings_for([0.9, 0.5, 0.05, 0.2]) == []  # never two in a row
  assert _warnings_for([0.0, 0.2, 0.1, 0.3]) == []  # 10% exactly is not above
  warnings = _warnings_for([0.0, 0.05, 0.2, 0.3, 0.5, 0.6, 0.05, 0.4, 0.4])
  assert len(warnings) == 1
  assert "20%, 30% of the last 2 log intervals" in warnings[0]
  assert "raise config.data.num_workers" in warnings[0]


def test_a_tiny_run_logs_the_data_wait_of_every_interval(tmp_path, capsys):
  workdir = tmp_path / "run"
  training_testing.train(workdir, **{"train.steps": 20, "train.log_every": 10})
  records = [json.loads(line) for line in (workdir / "train_metrics.jsonl").read_text()
             .splitlines()]
  steps = [r for r in records if "event" not in r]
  assert [r["step"] for r in steps] == [10, 20]
  for record in steps:
    assert 0.0 <= record["data_wait_fraction"] <= 1.0
  assert capsys.readouterr().out.count("data wait ") == 2
  # Each interval's data counts are those of its batches, as the pipeline gives them.
  config = training_testing.micro_config(**{"train.steps": 20})
  with data.Pipeline(*data.run_config(config)).train_iterator() as batches:
    for record in steps:
      before = batches.stats()
      for _ in range(10):
        next(batches)
      after = batches.stats()
      tokens = after["tokens"] - before["tokens"]
      positions = after["positions"] - before["positions"]
      assert record["padding_fraction"] == pytest.approx(1 - tokens / positions)
      for name in ("test_redraws", "overflow_redraws"):
        assert record[name] == after[name] - before[name]
