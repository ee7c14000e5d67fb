"""Finetuning a pretrained checkpoint (LoRA or full): the trainer-side pieces of a run whose
`config.pretrained` names a Hugging Face checkpoint directory (configs/finetune.py, and
configs/rfcot.py with `model=DIR`).

Such a run differs from a from-scratch one in four places, each a function here, which the
`pretrained` model source (mode.py) calls:
- `build`: the checkpoint's architecture (its config.json; `config.model` adds only the runtime
  fields `RUNTIME_FIELDS`: dtypes, attention kernel and its segments, remat, scan unrolling),
  with LoRA adapters when `config.lora.rank` > 0 (rank, alpha, dropout, targets), and an
  optimizer of `trainable(config)`: the adapters only, or every parameter without LoRA;
- `spec` / `initialise`: the sharded state, the base weights read from the checkpoint straight
  into their shardings (`hf.load_params`) and only the rest (adapters, optimizer state)
  created by a jitted initialiser, whose random base initialisation is dead code that XLA drops:
  an 8B base is never materialised twice;
- the train step differentiates `trainable(config)` instead of every `nnx.Param`;
- `export`: adapters merged into the base weights, written as a Hugging Face checkpoint
  (config.json, safetensors, the source's tokenizer files) that `evaluate_llm` and transformers
  load.
The data is the ordinary pipeline with a text encoder (`llm.encoding`, or RF-CoT's).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
from typing import Any

import jax
import optax
from flax import nnx

from nupa_jax import models
from nupa_jax import paths
from nupa_jax import sharding as sharding_lib
from nupa_jax.llm import tokenizer as tokenizer_lib
from nupa_jax.models import hf
from nupa_jax.models import lora
from nupa_jax.models import state as state_lib

EXPORT_DIR = "export"
RUNTIME_FIELDS = ("dtype", "param_dtype", "attention_impl", "remat", "scan_unroll",
                  "cudnn_segments", "attention_span")
# Files of the source checkpoint copied next to exported weights (whichever exist).
TOKENIZER_FILES = ("tokenizer.json", tokenizer_lib.TOKENIZER_CONFIG, "special_tokens_map.json",
                   tokenizer_lib.GENERATION_CONFIG, tokenizer_lib.CHAT_TEMPLATE_FILE)


def _rank(config) -> int:
  return int((config.get("lora") or {}).get("rank", 0))


def trainable(config):
  """The variables a finetuning step trains: the adapters, or every parameter without LoRA."""
  return lora.LoRAParam if _rank(config) > 0 else nnx.Param


def model_config(config) -> dict[str, Any]:
  """The checkpoint's architecture with `config.model`'s runtime fields."""
  fields = hf.model_config(hf.read_config(config.pretrained))
  given = config.get("model") or {}
  fields.update({k: given[k] for k in RUNTIME_FIELDS if given.get(k) is not None})
  return fields


def build(config, seed: int = 0, tx: optax.GradientTransformation | None = None):
  """The model with its adapters (and an optimizer of `trainable(config)` when tx is given)."""
  fields = model_config(config)
  with nnx.use_eager_sharding(False):
    model = models.build(fields, fields["vocab_size"], rngs=nnx.Rngs(seed))
    if _rank(config) > 0:
      lora.apply(model, rank=_rank(config), alpha=float(config.lora.alpha),
                 dropout=float(config.lora.dropout), targets=tuple(config.lora.targets),
                 rngs=nnx.Rngs(seed + 1))
    if tx is None:
      return model
    return model, nnx.Optimizer(model, tx, wrt=trainable(config))


def spec(config, mesh: jax.sharding.Mesh, *, seed: int = 0,
         tx: optax.GradientTransformation | None = None) -> state_lib.StateSpec:
  """The StateSpec (structure, shapes, shardings) of the adapted model (and optimizer)."""
  abstract = nnx.eval_shape(lambda: build(config, seed, tx))
  model = abstract[0] if tx is not None else abstract
  graphdef, state = nnx.split(abstract)
  state_shardings, grad_shardings = state_lib.shardings(
      abstract, state, mesh, config.mesh.rules,
      optimizer_over_data=sharding_lib.optimizer_over_data(config))
  return state_lib.StateSpec(graphdef, state, state_shardings, model.requires_rng(),
                             frozenset(model.posenc.inputs), grad_shardings)


def initialise(state_spec: state_lib.StateSpec, config, *, seed: int = 0,
               tx: optax.GradientTransformation | None = None) -> nnx.State:
  """The sharded starting state: base weights from `config.pretrained`, fresh adapters (B = 0,
  so the model starts as the checkpoint) and optimizer state."""
  def fresh():
    state = nnx.split(build(config, seed, tx))[1]
    return nnx.filter_state(state, nnx.Not(nnx.Param))

  rest = jax.jit(fresh, out_shardings=nnx.filter_state(state_spec.shardings, nnx.Not(nnx.Param)),
                 compiler_options={"xla_backend_optimization_level": 0})()
  of_model = (lambda s: s[0]) if tx is not None else (lambda s: s)  # (model, optimizer) state
  base = nnx.filter_state(hf.load_params(config.pretrained, of_model(state_spec.abstract),
                                         of_model(state_spec.shardings)), nnx.Param)
  return nnx.merge_state(rest, nnx.State({0: base}) if tx is not None else base)


def export(model: nnx.Module, config, out_dir: str | os.PathLike):
  """Merges the adapters into the base weights (in place) and writes a Hugging Face
  checkpoint to `out_dir`: the weights in the parameters' dtype, the source config.json's
  other keys and its tokenizer files. Every process must call it; process 0 writes. A bucket
  (`gs://...`) gets the files written locally first, then uploaded."""
  if paths.is_remote(out_dir):
    with tempfile.TemporaryDirectory() as local:
      _export_local(model, config, pathlib.Path(local))
      if jax.process_index() == 0:
        paths.upload_tree(local, out_dir)
    return paths.path(out_dir)
  return _export_local(model, config, pathlib.Path(out_dir))


def _export_local(model: nnx.Module, config, out_dir: pathlib.Path) -> pathlib.Path:
  source = pathlib.Path(config.pretrained)
  lora.merge(model)
  hf.save_pretrained(model, out_dir, base_config=hf.read_config(source))
  if jax.process_index() == 0:
    for name in TOKENIZER_FILES:
      if (source / name).is_file():
        shutil.copyfile(source / name, out_dir / name)
  return out_dir
