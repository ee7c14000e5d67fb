"""`config.train` and `config.checkpoint` as frozen settings, read once (`nupa_jax.settings`).

Defaults are the paper's recipe where it has one (AdamW, weight decay 0.01, cosine decay,
global-norm clipping at 1); steps, batch size and learning rate have none: a run names them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from nupa_jax import settings

AUTO_STEPS_PER_CALL = 0  # config.train.steps_per_call: resolved by `Train.resolved`
# What AUTO_STEPS_PER_CALL may resolve to on a process driving several accelerators, tried in
# this order. On 4 H200s at the paper's batch of 256, 4 steps a call took the real command from
# 78-86 % of its step's rate to 97-99 %; on 2 GPUs, whose longer step the host keeps up with,
# it changed the rate by less than 1 %, so one rule serves both (docs/benchmarks). TPU hosts
# get the same rule, untimed there.
AUTO_STEPS_PER_CALL_CHOICES = (4, 2)


@dataclasses.dataclass(frozen=True)
class Train:
  """The optimisation of a run; `optimizer.make` / `optimizer.schedule` read it."""
  steps: int
  batch_size: int  # samples per step, as the pipeline batches them
  learning_rate: float
  log_every: int = 100
  optimizer: str = "adamw"
  schedule: str = "cosine"
  warmup_steps: int = 0
  end_lr_ratio: float = 0.0  # cosine decays to learning_rate * end_lr_ratio
  b1: float = 0.9
  b2: float = 0.999
  eps: float = 1e-8
  weight_decay: float = 0.01
  mu_dtype: str = ""  # dtype of Adam's first moment ("" = the parameters')
  grad_clip: float = 1.0  # global-norm clipping; 0 disables
  # XLA's Triton GEMM fusions on GPU; off, every matmul of the train step goes to cuBLAS.
  gpu_triton_gemm: bool = True
  # XLA's latency-hiding scheduler on GPU: the gradients' all-reduce (or reduce-scatter) of a
  # multi-GPU step starts while the backward pass of earlier layers still runs.
  gpu_overlap_collectives: bool = False
  # Each step's rows in this many parts, run one after another with their gradients added
  # (gradient accumulation): the same update, up to float rounding, for a model without random
  # draws, in a fraction of the activation memory. The rows per data-parallel device must
  # divide by it.
  microbatches: int = 1
  # Training steps run by one call of the jitted step (a scan over that many batches): the
  # host's per-call cost (buffers to every device, the launch) is paid once for them, for a
  # loop that falls behind a short multi-GPU step. log_every, checkpoint.every and eval.every
  # (those shorter than the run) must be multiples of it; a stop request is answered at the
  # end of a call. A run whose steps are no multiple of it compiles its shorter last call
  # separately. AUTO_STEPS_PER_CALL (the configs' default): see `auto_steps_per_call`. The
  # default here, 1, is what runs saved before the field existed used.
  steps_per_call: int = 1

  def compiler_options(self, backend: str) -> dict[str, bool]:
    """XLA options of the jitted train step on `backend` (jax.default_backend())."""
    if backend != "gpu":
      return {}
    options = {}
    if not self.gpu_triton_gemm:
      options["xla_gpu_enable_triton_gemm"] = False
    if self.gpu_overlap_collectives:
      options["xla_gpu_enable_latency_hiding_scheduler"] = True
    return options

  def __post_init__(self):
    for name in ("steps", "log_every", "microbatches"):
      if int(getattr(self, name)) < 1:
        raise ValueError(f"config.train.{name} must be >= 1")
    if int(self.steps_per_call) < 0:
      raise ValueError(f"config.train.steps_per_call must be >= 1, or "
                       f"{AUTO_STEPS_PER_CALL} for the automatic choice")

  def resolved(self, accelerators_per_process: int, checkpoint_every: int,
               eval_every: int) -> Train:
    """These settings with an automatic `steps_per_call` resolved (`auto_steps_per_call`);
    a count given by hand is kept."""
    if self.steps_per_call != AUTO_STEPS_PER_CALL:
      return self
    per_call = auto_steps_per_call(accelerators_per_process,
                                   (self.log_every, checkpoint_every, eval_every), self.steps)
    return dataclasses.replace(self, steps_per_call=per_call)

  @classmethod
  def from_config(cls, config) -> Train:
    return settings.read(config, "train", cls)


def auto_steps_per_call(accelerators_per_process: int, intervals: Iterable[int],
                        steps: int) -> int:
  """Steps a call for a process driving `accelerators_per_process` GPUs or TPUs: 1 with none
  or one (a CPU run; one GPU's command already keeps ~98 % of its step's rate), else the first
  of AUTO_STEPS_PER_CALL_CHOICES that divides every interval the loop stops at (log,
  checkpoint, evaluation: `aligned_intervals`), and 1 if none does. Host work per call grows
  with the devices a process feeds, so a process of several devices pays it once per several
  steps."""
  if accelerators_per_process <= 1:
    return 1
  stops = aligned_intervals(intervals, steps)
  return next((k for k in AUTO_STEPS_PER_CALL_CHOICES if all(e % k == 0 for e in stops)), 1)


def aligned_intervals(intervals: Iterable[int], steps: int) -> list[int]:
  """The intervals a call must end on: those shorter than the run's `steps`. An interval of 0
  (never) or of the whole run or more stops the loop only at its last step, which the last
  call ends on whatever its length."""
  return [int(every) for every in intervals if 0 < int(every) < steps]


@dataclasses.dataclass(frozen=True)
class Checkpoint:
  """When a run saves and what it keeps."""
  every: int
  keep: int = 2  # latest checkpoints kept (besides the best by validation loss)
  keep_best: bool = True
  async_save: bool = True

  def __post_init__(self):
    if int(self.every) < 1:
      raise ValueError("config.checkpoint.every must be >= 1")

  @classmethod
  def from_config(cls, config) -> Checkpoint:
    return settings.read(config, "checkpoint", cls)
