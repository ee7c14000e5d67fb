"""Model sizes by name, and the one place a model config is checked and completed.

The paper trains Llama-3.1-style decoders of three sizes (Appendix A.4.1, Table 10) plus a
2-layer 1.3M model (Table 6); `tiny` is for CPU tests and laptop runs. Any preset field can be
overridden from config, and a config without `preset` spells out every size field itself.

`ModelConfig` is frozen and hashable (nested dicts become sorted tuples of pairs) so modules
can keep it as static structure: an NNX graphdef that holds it can be a static jit argument.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax

PRESETS: dict[str, dict[str, Any]] = {
    # float32: bf16 on CPU is slow and noisy, and tests compare numbers.
    "tiny": dict(num_layers=2, hidden=128, mlp=384, heads=4, kv_heads=2, dtype="float32"),
    # The paper's 2-layer model (widths unpublished): 2 x (3 * 256^2 + 3 * 256 * 576) = 1.28M
    # without embeddings, ~1.3M with a digit vocabulary.
    "1.3m": dict(num_layers=2, hidden=256, mlp=576, heads=4, kv_heads=2, dtype="float32"),
    "100m": dict(num_layers=8, hidden=1024, mlp=3584, heads=8, kv_heads=2),
    "0.9b": dict(num_layers=16, hidden=2048, mlp=7168, heads=16, kv_heads=4),
    "3b": dict(num_layers=24, hidden=3072, mlp=10752, heads=24, kv_heads=6),
}

ATTENTION_IMPLS = ("auto", "cudnn", "xla")
# What a layer keeps for the backward pass (`jax.checkpoint` policy; None: no remat).
REMAT_POLICIES = {
    "none": None,
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Every knob of the decoder; see `resolve` for how a config dict becomes one."""
  vocab_size: int
  num_layers: int
  hidden: int
  mlp: int
  heads: int
  kv_heads: int
  head_dim: int
  tie_embeddings: bool = False
  qkv_bias: bool = False           # biases on the q, k, v projections (Qwen2)
  dtype: str = "bfloat16"          # compute dtype of activations and matmuls
  param_dtype: str = "float32"
  posenc: tuple = (("name", "rope"),)  # frozen {"name": ..., **options}
  attention_impl: str = "auto"     # xla | cudnn | auto (cudnn where it applies, see attention)
  max_len: int = 2048              # longest sequence learned position tables must cover
  digit_embeddings: bool = False   # compose number-token embeddings from per-place digits
  norm_eps: float = 1e-5
  init_std: float = 0.02           # Hugging Face Llama's initializer_range
  remat: str = "none"              # none | full | dots (keep matmul outputs)
  scan_unroll: int | bool = True   # layers per step of the scan over layers (True: all);
                                   # with a remat policy the scan stays rolled (one)
  # Speed knobs that keep the numbers (tests/models/test_models_fast_paths.py): one matmul for
  # q, k, v and one for gate, up over their kernels concatenated at run time (the parameters
  # keep their layout; on a tensor-parallel mesh the concatenation regathers the kernels), and
  # the layer loop's parameters taken by one split per stacked parameter instead of a static
  # slice per layer (the gradients then meet in one concatenate, not a pad and add per layer;
  # not with a remat policy, whose layers run as a rolled scan).
  fused_projections: bool = False
  split_layers: bool = False
  # cuDNN attention over packed rows given as at most this many segments (the samples a row
  # holds + 1 for its padding) instead of a same-segment mask, which cuDNN takes as a bias
  # over the whole row; 0: the mask. Only for training passes without an attention bias, on GPUs
  # with cuDNN's packed layout (Hopper or later; others keep the mask).
  cudnn_segments: int = 0
  # Training passes over packed rows attend within a band that holds samples of up to this many
  # positions (attention.band_layout), in XLA, instead of over the whole row; the data pipeline
  # refuses a longer sample. Faster where the whole row would run XLA's attention (FIRE's
  # learned bias), not against cuDNN's kernel. 0: the whole row.
  attention_span: int = 0

  @property
  def posenc_options(self) -> dict[str, Any]:
    return thaw(self.posenc)


_FIELDS = tuple(f.name for f in dataclasses.fields(ModelConfig))
_SIZE_FIELDS = ("num_layers", "hidden", "mlp", "heads", "kv_heads")


def freeze(value: Any) -> Any:
  """Mappings -> sorted tuples of (key, frozen value) pairs, lists -> tuples (hashable)."""
  if isinstance(value, Mapping) or hasattr(value, "to_dict"):
    items = value.to_dict().items() if hasattr(value, "to_dict") else value.items()
    return tuple(sorted((str(k), freeze(v)) for k, v in items))
  if isinstance(value, (list, tuple)):
    return tuple(freeze(v) for v in value)
  return value


def thaw(value: Any) -> Any:
  """Inverse of `freeze` for frozen mappings (tuples of 2-tuples with string keys)."""
  if isinstance(value, tuple) and all(
      isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
    return {k: thaw(v) for k, v in value}
  return value


def resolve(model_config: Mapping[str, Any] | Any, vocab_size: int | None = None) -> ModelConfig:
  """A complete, validated `ModelConfig` from a dict / ConfigDict (preset + overrides)."""
  if isinstance(model_config, ModelConfig):
    fields = dataclasses.asdict(model_config)
  else:
    fields = dict(model_config.to_dict() if hasattr(model_config, "to_dict") else model_config)
  preset = fields.pop("preset", None)
  if preset is not None:
    if preset not in PRESETS:
      raise ValueError(f"unknown model preset {preset!r}; known: {', '.join(PRESETS)}")
    fields = {**PRESETS[preset], **fields}
  unknown = sorted(set(fields) - set(_FIELDS))
  if unknown:
    raise ValueError(f"unknown model config fields {unknown}; known: preset, {', '.join(_FIELDS)}")
  missing = [f for f in _SIZE_FIELDS if fields.get(f) is None]
  if missing:
    raise ValueError(f"model config needs {missing} (or a preset: {', '.join(PRESETS)})")
  if fields.get("vocab_size") is not None and vocab_size is not None and (
      fields["vocab_size"] != vocab_size):
    raise ValueError(f"model config vocab_size={fields['vocab_size']} disagrees with the "
                     f"vocabulary's {vocab_size}; drop it from the config")
  fields["vocab_size"] = vocab_size if vocab_size is not None else fields.get("vocab_size")
  if fields["vocab_size"] is None:
    raise ValueError("vocab_size is required (pass the tokenizer's vocab_size to build)")
  if fields.get("head_dim") is None:
    if fields["hidden"] % fields["heads"]:
      raise ValueError(f"hidden={fields['hidden']} is not a multiple of heads={fields['heads']};"
                       " set head_dim explicitly")
    fields["head_dim"] = fields["hidden"] // fields["heads"]
  fields["posenc"] = freeze(fields.get("posenc", {"name": "rope"}))
  config = ModelConfig(**fields)
  _check(config)
  return config


def cudnn_unsupported(c: ModelConfig) -> str | None:
  """Why cuDNN's fused attention cannot run this config, or None if it can."""
  if c.dtype not in ("bfloat16", "float16"):
    return f"needs dtype bfloat16 or float16, not {c.dtype}"
  if c.head_dim % 8 or c.head_dim > 256:
    return f"needs head_dim a multiple of 8 and <= 256, not {c.head_dim}"
  return None


def _check(c: ModelConfig) -> None:
  """Combinations that would fail deep inside XLA, reported with their fix."""
  if c.heads % c.kv_heads:
    raise ValueError(f"heads={c.heads} must be a multiple of kv_heads={c.kv_heads}")
  if c.attention_impl not in ATTENTION_IMPLS:
    raise ValueError(f"unknown attention_impl {c.attention_impl!r}; known: "
                     f"{', '.join(ATTENTION_IMPLS)}")
  if c.attention_impl == "cudnn" and cudnn_unsupported(c):
    raise ValueError(f"attention_impl='cudnn' {cudnn_unsupported(c)}; use attention_impl='xla'"
                     " or 'auto'")
  if c.cudnn_segments < 0:
    raise ValueError(f"cudnn_segments must be >= 0 (0: a mask), not {c.cudnn_segments}")
  if c.attention_span < 0:
    raise ValueError(f"attention_span must be >= 0 (0: the whole row), not {c.attention_span}")
  if c.attention_span and c.cudnn_segments:
    raise ValueError("attention_span and cudnn_segments are two ways to attend over packed "
                     "rows: set one of them to 0")
  if c.remat not in REMAT_POLICIES:
    raise ValueError(f"unknown remat {c.remat!r}; known: {', '.join(sorted(REMAT_POLICIES))}")
