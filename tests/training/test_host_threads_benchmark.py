"""benchmarks/host_threads.py on CPU: the real training command runs under the sampler, which
finds the training loop in the trainer."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_sampler_finds_the_training_loop(tmp_path):
  out = tmp_path / "threads.json"
  result = subprocess.run(
      [sys.executable, str(ROOT / "benchmarks" / "host_threads.py"), "--at", "0", "--for", "120",
       "--out", str(out), "--", f"--config={ROOT}/configs/pe.py:size=tiny", f"--workdir={tmp_path / 'run'}",
       "--config.train.steps=40", "--config.train.log_every=10",
       "--config.eval.per_length=0", "--config.data.num_workers=0"],
      cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert out.exists(), result.stderr[-3000:]  # written when the window or the command ends
  counts = json.loads(out.read_text())
  assert counts["rounds"] > 0, result.stderr[-3000:]
  main = [(where, n) for thread, where, n in counts["own"] if thread == "MainThread"]
  # The counts in the message: a failure says where the main thread was instead.
  assert main and sum(n for _, n in main) == counts["rounds"], (counts["rounds"], main[:20])
  assert any("nupa_jax/training/trainer.py" in where for where, _ in main), main[:20]
