"""`config.train` and `config.checkpoint` as frozen settings, read once (`nupa_jax.settings`).

Defaults are the paper's recipe where it has one (AdamW, weight decay 0.01, cosine decay,
global-norm clipping at 1); steps, batch size and learning rate have none: a run names them.
"""
from __future__ import annotations

import dataclasses

from nupa_jax import settings


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
  # must be multiples of it; a stop request is answered at the end of a call.
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
    for name in ("steps", "log_every", "microbatches", "steps_per_call"):
      if int(getattr(self, name)) < 1:
        raise ValueError(f"config.train.{name} must be >= 1")

  @classmethod
  def from_config(cls, config) -> Train:
    return settings.read(config, "train", cls)


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
