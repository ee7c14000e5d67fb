"""benchmarks/run_step_variants.sh and its parts: an HLO module's text read back into what each
instruction is and where it came from, and a CPU smoke run of the variants and the profile."""
import gzip
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import benchmark_train  # noqa: E402  (benchmarks/ is not a package)
import hlo_index  # noqa: E402
import training_testing  # noqa: E402  (the micro model)

MODULE = """HloModule jit_train_step, is_scheduled=true

FileNames
1 "/repo/nupa_jax/models/layers.py"
2 "/repo/nupa_jax/models/transformer.py"

FunctionNames
1 "contract"
2 "Block.__call__"

FileLocations
1 {file_name_id=1 function_name_id=1 line=32 end_line=32 column=9 end_column=70}
2 {file_name_id=2 function_name_id=2 line=57 end_line=57 column=4 end_column=20}

StackFrames
1 {file_location_id=2 parent_frame_id=0}
2 {file_location_id=1 parent_frame_id=1}

%fused_computation.6 (param_0: f32[8,4]) -> f32[8,4] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  ROOT %add.1 = f32[8,4]{1,0} add(%param_0, %param_0)
}

ENTRY %main (p: f32[8,4], w: bf16[4,4]) -> (f32[8,4], bf16[8,4]) {
  %p = f32[8,4]{1,0} parameter(0)
  %loop_add_fusion.6 = f32[8,4]{1,0} fusion(%p), kind=kLoop, calls=%fused_computation.6, \
metadata={op_name="jit(train_step)/transpose(jvp(mlp))/add_any" stack_frame_id=1}
  %custom-call.3 = (bf16[8,4]{1,0}, s8[64]{0}) custom-call(%p, %w), \
custom_call_target="__cublas$gemm", \
metadata={op_name="jit(train_step)/jvp(attention)/dot_general" stack_frame_id=2}
  ROOT %tuple = (f32[8,4]{1,0}, bf16[8,4]{1,0}) tuple(%loop_add_fusion.6, %custom-call.3)
}
"""


def test_index_names_each_instruction_by_its_kernel_name_with_op_scope_and_source_line():
  ops = hlo_index.index(MODULE)
  assert ops["loop_add_fusion_6"] == hlo_index.HloOp(
      "fusion:kLoop", "f32[8,4]{1,0}", "jit(train_step)/transpose(jvp(mlp))/add_any",
      "transformer.py:57 __call__")
  assert ops["custom_call_3"] == hlo_index.HloOp(
      "custom-call:__cublas$gemm", "(bf16[8,4]{1,0}, s8[64]{0})",
      "jit(train_step)/jvp(attention)/dot_general", "layers.py:32 contract")
  assert ops["add_1"].op == "add" and ops["add_1"].source == ""  # no metadata: no source
  assert hlo_index.kernel_key("gemm_fusion_dot.172") == "gemm_fusion_dot_172"


def test_every_variants_compiler_options_are_known_to_xla():
  """XLA rejects an option it does not know when it compiles (the GPU-only ones are then
  ignored on CPU): each variant's options compile a small program, and a misspelt one fails."""
  import benchmark_step_variants  # pylint: disable=g-import-not-at-top  (not a package)
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  lowered = jax.jit(lambda x: x @ x.T).lower(jnp.ones((4, 4)))
  options = {name: dict(variant.compiler_options)
             for name, variant in benchmark_step_variants.VARIANTS.items()
             if variant.compiler_options}
  assert len(options) >= 4
  for name, compiler_options in options.items():
    lowered.compile(compiler_options=compiler_options)  # raises on an unknown option
  with pytest.raises(Exception, match="No such compile option"):
    lowered.compile(compiler_options={"xla_gpu_enable_trition_gemm": False})


def test_times_variants_and_profiles_the_fastest_on_cpu(tmp_path):
  """The base step, a variant of model overrides with XLA compiler options, the optimizer
  state split over the two devices and the parameters split over them: first-step parity
  with the base step, timings, then the profile of the fastest."""
  names = ["base", "fused_split_no_triton_gemm", "zero1", "fsdp"]
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", PYTHON=sys.executable,
             XLA_FLAGS="--xla_backend_optimization_level=0 "
             "--xla_force_host_platform_device_count=2", SIZE="tiny", BATCHES="32",
             STEPS="2", ROUNDS="1", VARIANTS=",".join(names),
             OVERRIDES=" ".join(training_testing.MICRO_MODEL))
  result = subprocess.run(["bash", str(ROOT / "benchmarks" / "run_step_variants.sh"),
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  results = [json.loads(line) for line in (tmp_path / "variants.jsonl").open()]
  assert [r["variant"] for r in results] == names
  assert all("error" not in r for r in results), [r.get("error") for r in results]
  base, fused = results[:2]
  assert fused["overrides"][-2:] == ["model.fused_projections=True", "model.split_layers=True"]
  # OVERRIDES reach every variant: the micro model's one layer of 32 (the tiny preset alone
  # has two of 128).
  assert {r["params"] for r in results} == {results[0]["params"]} and base["params"] < 100_000
  assert fused["compiler_options"] == {"xla_gpu_enable_triton_gemm": False}
  assert any("mesh.shard_optimizer_over_data=True" in r["overrides"] for r in results)
  # A variant on another mesh (parameters split over `fsdp`) gets its own placed batches.
  assert any("mesh.shape={'data': 1, 'fsdp': -1, 'tensor': 1}" in r["overrides"]
             for r in results)
  assert base["speedup"] == 1.0 and fused["step_ms"] > 0 and fused["samples_per_s"] > 0
  for r in results[1:]:
    assert abs(r["first_loss"] - base["first_loss"]) < 1e-5 * base["first_loss"], r["variant"]
    assert abs(r["first_grad_norm"] - base["first_grad_norm"]) < 1e-3 * base["first_grad_norm"], (
        r["variant"])
  best = (tmp_path / "best.txt").read_text().strip()
  assert best == min(results, key=lambda r: r["step_ms"])["variant"]
  profile = json.loads((tmp_path / "profile.jsonl").read_text())
  assert profile["variant"] == best and profile["busy_ms_per_step"] > 0
  assert "model.num_layers=1" in profile["overrides"]  # OVERRIDES reach the profile too
  assert profile["devices"] == 2
  assert 0 <= profile["exposed_collective_ms_per_step"] <= profile["busy_ms_per_step"]
  described = [k for k in profile["top_kernels"] if "op" in k]
  assert len(described) >= len(profile["top_kernels"]) // 2
  assert any(k["source"].startswith("layers.py:") for k in described)
  with gzip.open(tmp_path / "best_hlo.txt.gz", "rt") as f:
    assert f.readline().startswith("HloModule jit_train_step")


def test_profile_reads_the_first_gpu_and_the_collective_time_nothing_else_overlaps():
  import profile_train  # pylint: disable=g-import-not-at-top  (not a package)
  meta = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}}
          for pid, name in ((7, "/device:GPU:1"), (9, "/device:GPU:0"), (3, "/host:CPU"))]
  kernels = [  # GPU 0: a matmul 0-10 us, an all-reduce 5-20 us (10-20 alone), a fusion 30-35
      {"ph": "X", "pid": 9, "ts": 0, "dur": 10, "name": "sm90_xmma_gemm"},
      {"ph": "X", "pid": 9, "ts": 5, "dur": 15, "name": "ncclDevKernel_AllReduce_Sum_f32"},
      {"ph": "X", "pid": 9, "ts": 30, "dur": 5, "name": "loop_add_fusion"},
      {"ph": "X", "pid": 7, "ts": 0, "dur": 99, "name": "sm90_xmma_gemm"}]
  events = profile_train.device_events({"traceEvents": meta + kernels})
  assert [e["pid"] for e in events] == [9, 9, 9]
  summary = profile_train.summarize(events, steps=1, top=5)
  assert summary["busy_ms_per_step"] == 0.025  # 0-20 and 30-35 us
  assert summary["exposed_collective_ms_per_step"] == 0.01


def test_mfu_is_over_the_peak_of_every_device_the_step_runs_on():
  # 1e8 parameters at 1e5 tokens/s: 6e13 FLOP/s, hand-computed against 989 TFLOP/s a card.
  assert benchmark_train.mfu(10**8, 1e5) == round(6e13 / 989e12, 4) == 0.0607
  assert benchmark_train.mfu(10**8, 1e5, devices=4) == round(6e13 / (4 * 989e12), 4) == 0.0152
