"""train_metrics.jsonl: line-flushed records, resume truncation, events; the console line."""
import importlib.util
import io
import json
import subprocess
import sys
import textwrap

import pytest

from nupa_jax.training import writers


def records(path):
  return [json.loads(line) for line in path.read_text().splitlines()]


def test_lines_are_readable_before_close_and_resume_drops_later_steps(tmp_path):
  writer = writers.MetricWriter(tmp_path)
  for step in (1, 2, 3, 4):
    writer.write({"step": step, "loss": 1.0 / step})
  writer.event("eval", step=4, val_loss=0.5)
  assert [r["step"] for r in records(tmp_path / "train_metrics.jsonl")] == [1, 2, 3, 4, 4]
  writer.close()
  with open(tmp_path / "train_metrics.jsonl", "a") as f:
    f.write('{"step": 5, "lo')  # a run killed mid-line
  resumed = writers.MetricWriter(tmp_path)
  resumed.truncate_after(2)
  resumed.event("resume", step=2)
  resumed.write({"step": 3, "loss": 0.3})
  resumed.close()
  assert records(tmp_path / "train_metrics.jsonl") == [
      {"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}, {"event": "resume", "step": 2},
      {"step": 3, "loss": 0.3}]


def test_disabled_writer_writes_nothing(tmp_path):
  writer = writers.MetricWriter(tmp_path / "run", enabled=False)
  writer.write({"step": 1, "loss": 1.0})
  writer.event("resume", step=1)
  writer.truncate_after(0)
  writer.close()
  assert not (tmp_path / "run").exists()


def test_progress_line_shows_eta():
  out = io.StringIO()
  progress = writers.Progress(1000, stream=out)
  progress.log({"step": 100, "loss": 0.5, "learning_rate": 1e-3, "grad_norm": 0.25,
                "samples_per_s": 6400.0, "tokens_per_s": 1e5, "samples_seen": 6400,
                "data_wait_fraction": 0.125}, 10.0)
  line = out.getvalue()
  assert "step  100/1000" in line and "loss 0.5000" in line and "6,400 samples/s" in line
  assert "data wait 12%" in line
  assert "eta 1:30" in line  # 900 steps at 10 steps/s
  assert "peak mem" not in line  # a backend without memory statistics
  progress.log({"step": 200, "loss": 0.5, "learning_rate": 1e-3, "grad_norm": 0.25,
                "samples_per_s": 6400.0, "tokens_per_s": 1e5, "samples_seen": 12800,
                "data_wait_fraction": 0.125, "peak_memory_gib": 41.26}, 10.0)
  assert "peak mem 41.3 GiB  seen 12,800" in out.getvalue().splitlines()[-1]
  quiet = io.StringIO()
  writers.Progress(10, enabled=False, stream=quiet).print("hidden")
  assert quiet.getvalue() == ""


def _tfrecords(path):
  """The records of a TFRecord file: each a length (8 bytes), its CRC (4), the data, its CRC."""
  data, records_, at = path.read_bytes(), [], 0
  while at < len(data):
    length = int.from_bytes(data[at:at + 8], "little")
    records_.append(data[at + 12:at + 12 + length])
    at += 12 + length + 4
  return records_


@pytest.mark.parametrize("module", ["torch", "google.cloud.storage"])
def test_tensorboard_scalars_are_written_without_importing_what_no_run_uses(tmp_path, module):
  """The event file holds each numeric field as a scalar at its step; writing it imports
  neither torch nor google-cloud-storage (seconds of a run's start-up, for features no run
  uses), yet leaves each importable afterwards."""
  try:
    installed = importlib.util.find_spec(module) is not None
  except ModuleNotFoundError:  # its parent package is missing too
    installed = False
  if not installed:
    pytest.skip(f"{module} is not installed: nothing to keep out")
  script = textwrap.dedent(f"""
      import importlib.util, sys
      from nupa_jax.training import writers
      writer = writers.MetricWriter({str(tmp_path)!r})
      writer.write({{"step": 3, "loss": 1.5, "note": "text"}})
      writer.scalars("eval", 3, {{"val_loss": 0.25}})
      writer.close()
      print({module!r} in sys.modules, importlib.util.find_spec({module!r}) is not None)
      """)
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == ["False", "True"]
  from tensorboardX.proto import event_pb2  # pylint: disable=g-import-not-at-top
  (events_file,) = (tmp_path / "tensorboard").iterdir()
  scalars = {}
  for record in _tfrecords(events_file):
    event = event_pb2.Event.FromString(record)
    for value in event.summary.value:
      scalars[value.tag] = (event.step, value.simple_value)
  assert scalars == {"train/loss": (3, 1.5), "eval/val_loss": (3, 0.25)}
