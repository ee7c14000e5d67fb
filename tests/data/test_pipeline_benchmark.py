"""benchmarks/benchmark_pipeline.py on CPU: it builds the pipeline of the batch size it is
given and reports rates that agree with each other (samples per batch x batches per second)."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "benchmark_pipeline.py"


def test_reports_the_rate_of_the_requested_batch(tmp_path):
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  result = subprocess.run(
      [sys.executable, str(SCRIPT), "--tasks=add_int", "--num_workers=0", "--seconds=0.5",
       "--batch_size=32"],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-4000:]
  assert "'batch_size': 32, 'rows': 2," in result.stdout
  line = re.search(r"workers=0: ([\d,]+) samples/s, ([\d,]+) tokens/s \(([\d,]+) positions/s "
                   r"incl\. padding\), padding ([\d.]+), ([\d.]+) ms/batch", result.stdout)
  assert line, result.stdout
  samples, tokens, positions = (int(line[i].replace(",", "")) for i in (1, 2, 3))
  padding, ms_per_batch = float(line[4]), float(line[5])
  assert 0 < tokens <= positions
  assert abs(padding - (1 - tokens / positions)) < 2e-3
  # 32 samples a batch: the samples/s and ms/batch figures describe the same batches.
  assert abs(samples - 32 / (ms_per_batch / 1e3)) / samples < 0.05


def test_times_the_data_the_trainer_builds_for_a_recipe(tmp_path):
  """--config: the recipe's text mode shapes the batches (RF-CoT: one trace a padded row of the
  context), not the benchmark's own data flags."""
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  result = subprocess.run(
      [sys.executable, str(SCRIPT),
       "--config=configs/rfcot.py:size=tiny,tasks=mod_int,tokenizer=digits,context=1024",
       "--config.train.batch_size=8", "--num_workers=0", "--seconds=0.5"],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-4000:]
  assert ("'batch_size': 8, 'rows': 8, 'seq_len': 1024, 'samples_per_row': 1, "
          "'packing': 'padded'") in result.stdout, result.stdout
  assert re.search(r"workers=0: [\d,]+ samples/s", result.stdout), result.stdout
