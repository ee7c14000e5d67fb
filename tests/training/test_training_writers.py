"""train_metrics.jsonl: line-flushed records, resume truncation, events; the console line."""
import io
import json

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
