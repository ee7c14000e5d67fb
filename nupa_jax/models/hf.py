"""Hugging Face Llama-family checkpoints in and out of the nupa_jax decoder.

`load_pretrained(DIR)` reads a local checkpoint (config.json, `model.safetensors` or a sharded
`model.safetensors.index.json`) into a `Transformer`; `save_pretrained(model, DIR)` writes one
that transformers loads. Families are a registry keyed by config.json's `model_type`: Llama 2 /
3 / 3.1 and Qwen2, which differ from each other only in switches of the one decoder (q/k/v
biases, tied embeddings, RoPE theta and scaling, norm epsilon).

config.json comes in two dialects: transformers 4 (most checkpoints on the hub, Llama-3.1
included) writes `rope_theta` and `rope_scaling`; transformers 5 writes `rope_parameters`.
Both are read; `save_pretrained` writes the transformers 4 keys, which both versions read.

Weights never exist whole on one host per device: each parameter is created with
`jax.make_array_from_callback`, whose callback reads only the block a device holds, straight
from the memory-mapped safetensors file (`safe_open(...).get_slice`), layer by layer; replicas
of a block share one host copy. A
Hugging Face linear weight is `[out, in]`; ours is `[*in_axes, *out_axes]` with heads and head
dims as axes of their own (and a leading `layers` axis for stacked blocks), so each mapping is
"these groups of our axes, flattened, are the tensor's dimensions" (`_Weight.axes`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax import traverse_util
from jax.experimental import multihost_utils

from nupa_jax import sharding as sharding_lib
from nupa_jax.models import lora
from nupa_jax.models.presets import ModelConfig
from nupa_jax.models.transformer import Transformer, build

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
MAX_SHARD_BYTES = 5 << 30

@dataclasses.dataclass(frozen=True)
class Family:
  """What a `model_type` changes in the decoder, and how transformers names its class."""
  architecture: str
  qkv_bias: bool


FAMILIES = {
    "llama": Family("LlamaForCausalLM", qkv_bias=False),
    "qwen2": Family("Qwen2ForCausalLM", qkv_bias=True),
}

# RoPE variants (`rope_type`) and the keys our rope posenc's `scaling` option keeps.
ROPE_SCALING_KEYS = {
    "default": (),
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor",
               "original_max_position_embeddings"),
}


@dataclasses.dataclass(frozen=True)
class _Weight:
  """A Hugging Face tensor (`{}` = the layer index) as groups of our per-layer axes."""
  name: str
  axes: tuple[tuple[int, ...], ...]


def _linear(name: str, n_in: int, n_out: int) -> _Weight:
  """`[out, in]` weight of a projection whose kernel is ours `[*in (n_in axes), *out]`."""
  return _Weight(name, (tuple(range(n_in, n_in + n_out)), tuple(range(n_in))))


_LAYER = "model.layers.{}."
WEIGHTS = {
    ("embed", "table"): _Weight("model.embed_tokens.weight", ((0,), (1,))),
    ("norm", "scale"): _Weight("model.norm.weight", ((0,),)),
    ("head", "kernel"): _linear("lm_head.weight", 1, 1),
    ("layers", "attn_norm", "scale"): _Weight(_LAYER + "input_layernorm.weight", ((0,),)),
    ("layers", "mlp_norm", "scale"): _Weight(_LAYER + "post_attention_layernorm.weight",
                                             ((0,),)),
    ("layers", "attn", "o", "kernel"): _linear(_LAYER + "self_attn.o_proj.weight", 2, 1),
    **{("layers", "attn", p, "kernel"): _linear(_LAYER + f"self_attn.{p}_proj.weight", 1, 2)
       for p in "qkv"},
    **{("layers", "attn", p, "bias"): _Weight(_LAYER + f"self_attn.{p}_proj.bias", ((0, 1),))
       for p in "qkv"},
    **{("layers", "mlp", p, "kernel"): _linear(_LAYER + f"mlp.{p}_proj.weight", 1, 1)
       for p in ("gate", "up")},
    ("layers", "mlp", "down", "kernel"): _linear(_LAYER + "mlp.down_proj.weight", 1, 1),
}
# Tensors some checkpoints carry that the model recomputes (old Llama rotary tables).
_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


# --------------------------------------------------------------------------- config.json
def read_config(path: str | os.PathLike) -> dict[str, Any]:
  """config.json of a checkpoint directory."""
  file = pathlib.Path(path) / CONFIG_FILE
  if not file.is_file():
    raise FileNotFoundError(f"no {CONFIG_FILE} in {path}: expected a Hugging Face checkpoint "
                            "directory (config.json + model.safetensors)")
  return json.loads(file.read_text())


def rope_options(hf: Mapping[str, Any]) -> dict[str, Any]:
  """The rope posenc of a config.json in either dialect: `{"name", "theta", "scaling"}`."""
  parameters = dict(hf.get("rope_parameters") or {})
  legacy = dict(hf.get("rope_scaling") or {})
  theta = parameters.pop("rope_theta", hf.get("rope_theta", 10000.0))
  scaling = parameters or legacy
  rope_type = scaling.get("rope_type", scaling.get("type", "default"))
  if rope_type not in ROPE_SCALING_KEYS:
    raise ValueError(f"unsupported rope_type {rope_type!r}; known: "
                     f"{', '.join(ROPE_SCALING_KEYS)}")
  missing = [k for k in ROPE_SCALING_KEYS[rope_type] if k not in scaling]
  if missing:
    raise ValueError(f"rope scaling {rope_type!r} needs {missing} in config.json")
  options = {"name": "rope", "theta": float(theta), "scaling": None}
  if rope_type != "default":
    options["scaling"] = {"rope_type": rope_type,
                          **{k: scaling[k] for k in ROPE_SCALING_KEYS[rope_type]}}
  return options


def model_config(hf: Mapping[str, Any], dtype: str = "bfloat16") -> dict[str, Any]:
  """The `models.build` fields of a Hugging Face config.json; `dtype` for params and compute."""
  family = FAMILIES.get(hf.get("model_type"))
  if family is None:
    raise ValueError(f"unsupported model_type {hf.get('model_type')!r}; known: "
                     f"{', '.join(FAMILIES)}")
  unsupported = {"hidden_act": hf.get("hidden_act", "silu") != "silu",
                 "attention_bias": bool(hf.get("attention_bias")),
                 "mlp_bias": bool(hf.get("mlp_bias")),
                 "use_sliding_window": bool(hf.get("use_sliding_window"))}
  bad = [key for key, is_bad in unsupported.items() if is_bad]
  if bad:
    raise ValueError(f"config.json sets {', '.join(f'{k}={hf[k]!r}' for k in bad)}, which the "
                     "decoder does not implement (it is a SwiGLU Llama with optional q/k/v bias)")
  heads = int(hf["num_attention_heads"])
  return {
      "vocab_size": int(hf["vocab_size"]),
      "num_layers": int(hf["num_hidden_layers"]),
      "hidden": int(hf["hidden_size"]),
      "mlp": int(hf["intermediate_size"]),
      "heads": heads,
      "kv_heads": int(hf.get("num_key_value_heads") or heads),
      "head_dim": int(hf.get("head_dim") or int(hf["hidden_size"]) // heads),
      "qkv_bias": family.qkv_bias,
      "tie_embeddings": bool(hf.get("tie_word_embeddings", False)),
      "norm_eps": float(hf.get("rms_norm_eps", 1e-6)),
      "max_len": int(hf.get("max_position_embeddings", 2048)),
      "dtype": dtype,
      "param_dtype": dtype,
      "posenc": rope_options(hf),
  }


def hf_config(config: ModelConfig, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
  """A transformers config.json for a decoder config, over `base` (the source checkpoint's,
  for token ids and the like) when given; RoPE in the transformers 4 keys."""
  posenc = config.posenc_options
  if posenc.get("name") != "rope" or set(posenc) - {"name", "theta", "scaling"}:
    raise ValueError(f"transformers models use plain RoPE; this model's posenc is {posenc}")
  if config.digit_embeddings:
    raise ValueError("digit_embeddings have no Hugging Face counterpart")
  family = "qwen2" if getattr(config, "qkv_bias", False) else "llama"
  replaced = ("rope_parameters", "rope_scaling", "dtype")  # transformers 5 keys, rewritten
  out = {k: v for k, v in (base or {}).items() if k not in replaced}
  out.update({
      "architectures": [FAMILIES[family].architecture], "model_type": family,
      "vocab_size": config.vocab_size, "hidden_size": config.hidden,
      "intermediate_size": config.mlp, "num_hidden_layers": config.num_layers,
      "num_attention_heads": config.heads, "num_key_value_heads": config.kv_heads,
      "head_dim": config.head_dim, "hidden_act": "silu", "rms_norm_eps": config.norm_eps,
      "tie_word_embeddings": config.tie_embeddings,
      "max_position_embeddings": config.max_len,
      "rope_theta": float(posenc.get("theta", 10000.0)),
      "rope_scaling": posenc.get("scaling"),
      "torch_dtype": config.param_dtype,
  })
  if family == "llama":
    out.update(attention_bias=False, mlp_bias=False)
  return out


# --------------------------------------------------------------------------- tensors in
class _Checkpoint(contextlib.ExitStack):
  """Lazy, sliceable tensors of a checkpoint directory (one file or a sharded index)."""

  def __init__(self, path: str | os.PathLike):
    super().__init__()
    from safetensors import safe_open  # pylint: disable=g-import-not-at-top
    path = pathlib.Path(path)
    if (path / INDEX_FILE).is_file():
      weight_map = json.loads((path / INDEX_FILE).read_text())["weight_map"]
    elif (path / WEIGHTS_FILE).is_file():
      weight_map = None
    else:
      raise FileNotFoundError(f"no {WEIGHTS_FILE} or {INDEX_FILE} in {path}")
    files = sorted(set(weight_map.values())) if weight_map else [WEIGHTS_FILE]
    handles = {f: self.enter_context(safe_open(str(path / f), framework="np")) for f in files}
    if weight_map is None:
      weight_map = {name: WEIGHTS_FILE for name in handles[WEIGHTS_FILE].keys()}
    self.tensors = {name: handles[f].get_slice(name) for name, f in weight_map.items()}


def _tensor_shape(tensor) -> tuple[int, ...]:
  return tuple(tensor.get_shape()) if hasattr(tensor, "get_shape") else tuple(tensor.shape)


def _hf_shape(weight: _Weight, shape: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(math.prod(shape[a] for a in group) for group in weight.axes)


def _read_block(tensor, weight: _Weight, shape: tuple[int, ...],
                index: tuple[slice, ...]) -> np.ndarray:
  """Block `index` (unit-step slices over our per-layer axes of `shape`) of a tensor.

  Only the rows / columns covering the block's leading axis of each group are read; the
  other axes of a group (head_dim inside heads x head_dim) are cut after reshaping.
  """
  hf_index, sizes = [], []
  for group in weight.axes:
    lead = index[group[0]]
    inner = math.prod(shape[a] for a in group[1:])
    hf_index.append(slice(lead.start * inner, lead.stop * inner))
    sizes += [lead.stop - lead.start] + [shape[a] for a in group[1:]]
  block = np.asarray(tensor[tuple(hf_index)]).reshape(sizes)
  block = block.transpose(np.argsort([a for group in weight.axes for a in group]))
  leads = {group[0] for group in weight.axes}
  return block[tuple(slice(None) if a in leads else index[a] for a in range(len(shape)))]


def _block_reader(tensors: Mapping[str, Any], path: tuple[str, ...], weight: _Weight,
                  shape: tuple[int, ...], dtype):
  """`index -> np.ndarray` for `jax.make_array_from_callback`, checking shapes up front."""
  stacked = path[0] == "layers"
  inner = shape[1:] if stacked else shape
  names = [weight.name.format(i) for i in range(shape[0])] if stacked else [weight.name]
  expected = _hf_shape(weight, inner)
  for name in names:
    if name not in tensors:
      raise ValueError(f"the checkpoint has no tensor {name!r} (for {'/'.join(path)})")
    if _tensor_shape(tensors[name]) != expected:
      raise ValueError(f"{name} has shape {_tensor_shape(tensors[name])}, the model config "
                       f"needs {expected}: does config.json match the weights?")

  blocks = {}  # devices holding replicas of a block share one host copy

  def read(index: tuple[slice, ...]) -> np.ndarray:
    index = tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, shape))
    key = tuple((s.start, s.stop) for s in index)
    if key not in blocks:
      if stacked:
        blocks[key] = np.stack([
            _read_block(tensors[names[i]], weight, inner, index[1:]).astype(dtype)
            for i in range(index[0].start, index[0].stop)])
      else:
        blocks[key] = _read_block(tensors[names[0]], weight, inner, index).astype(dtype)
    return blocks[key]

  return read


def load_params(source: str | os.PathLike | Mapping[str, Any], abstract_state: nnx.State,
                shardings: nnx.State | None = None) -> nnx.State:
  """`abstract_state` (the model's, from `nnx.eval_shape`) with every `nnx.Param` read from a
  checkpoint directory or a `{name: array}` mapping, in its dtype, each array created in its
  sharding (default: the first device). Other variables (LoRA adapters) are left as given.
  Every tensor of the source must be used (an unused one means a feature the decoder lacks).
  """
  with contextlib.ExitStack() as stack:
    if isinstance(source, Mapping):
      tensors = source
    else:
      tensors = stack.enter_context(_Checkpoint(source)).tensors
    pure = traverse_util.flatten_dict(nnx.to_pure_dict(nnx.state(abstract_state, nnx.Param)))
    where = (traverse_util.flatten_dict(nnx.to_pure_dict(shardings)) if shardings is not None
             else {})
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    used = set()
    for path, aval in pure.items():
      weight = WEIGHTS.get(path)
      if weight is None:
        raise ValueError(f"no Hugging Face weight maps to parameter {'/'.join(path)}")
      read = _block_reader(tensors, path, weight, tuple(aval.shape), aval.dtype)
      pure[path] = jax.make_array_from_callback(aval.shape, where.get(path, device), read)
      layers = range(aval.shape[0]) if path[0] == "layers" else [None]
      used.update(weight.name.format(i) for i in layers)
    unused = sorted(n for n in set(tensors) - used
                    if not n.endswith(_IGNORED_SUFFIXES) and not (
                        n == WEIGHTS["head", "kernel"].name and ("head", "kernel") not in pure))
    if unused:
      raise ValueError(f"the checkpoint has tensors the model does not use: {unused[:8]}"
                       f"{' ...' if len(unused) > 8 else ''}")
  state = jax.tree.map(lambda x: x, abstract_state)  # a copy: the caller's stays abstract
  nnx.replace_by_pure_dict(state, traverse_util.unflatten_dict(pure))
  return state


def load_pretrained(path: str | os.PathLike, dtype: str = "bfloat16",
                    mesh: jax.sharding.Mesh | None = None, *,
                    rules=sharding_lib.DEFAULT_RULES) -> Transformer:
  """The decoder of a Hugging Face checkpoint directory, parameters and compute in `dtype`.

  With a mesh, each parameter is created sharded by its logical axes under `rules`; without,
  on the default device. `model(tokens)` gives float32 logits [B, T, vocab_size].
  """
  config = model_config(read_config(path), dtype)
  with nnx.use_eager_sharding(False):
    abstract = nnx.eval_shape(lambda: build(config, config["vocab_size"], rngs=nnx.Rngs(0)))
  graphdef, abstract_state = nnx.split(abstract)
  shardings = (sharding_lib.state_shardings(abstract_state, mesh, rules) if mesh is not None
               else None)
  return nnx.merge(graphdef, load_params(path, abstract_state, shardings))


# --------------------------------------------------------------------------- tensors out
def _host(value: jax.Array) -> np.ndarray:
  """The whole array on this host (gathered from every process when it spans several)."""
  if getattr(value, "is_fully_addressable", True):
    return np.asarray(jax.device_get(value))
  return np.asarray(multihost_utils.process_allgather(value, tiled=True))


def _to_hf(block: np.ndarray, weight: _Weight) -> np.ndarray:
  order = [a for group in weight.axes for a in group]
  return block.transpose(order).reshape(_hf_shape(weight, block.shape))


def hf_tensors(model: nnx.Module, dtype: str | None = None) -> Iterator[tuple[str, np.ndarray]]:
  """(name, array) of every Hugging Face tensor of the model, one parameter at a time."""
  if jax.tree.leaves(nnx.state(model, lora.LoRAParam)):
    raise ValueError("the model has LoRA adapters: fold them in with lora.merge(model) first")
  params = traverse_util.flatten_dict(nnx.to_pure_dict(nnx.state(model, nnx.Param)))
  for path, value in params.items():
    weight = WEIGHTS.get(path)
    if weight is None:
      raise ValueError(f"parameter {'/'.join(path)} has no Hugging Face counterpart")
    array = _host(value)
    if dtype is not None:
      array = array.astype(jnp.dtype(dtype))
    if path[0] == "layers":
      for i, layer in enumerate(array):
        yield weight.name.format(i), np.ascontiguousarray(_to_hf(layer, weight))
    else:
      yield weight.name, np.ascontiguousarray(_to_hf(array, weight))


def save_pretrained(model: Transformer, path: str | os.PathLike, *, dtype: str | None = None,
                    base_config: Mapping[str, Any] | None = None,
                    max_shard_bytes: int = MAX_SHARD_BYTES) -> None:
  """Writes config.json and safetensors (sharded with an index above `max_shard_bytes`) that
  `transformers.AutoModelForCausalLM.from_pretrained(path)` loads.

  dtype: stored dtype (default the parameters'); base_config: a config.json whose other keys
  (token ids, ...) are kept. Every process must call it (arrays spanning processes are
  gathered); process 0 writes. LoRA adapters must be merged first (`lora.merge`).
  """
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  path = pathlib.Path(path)
  write = jax.process_index() == 0
  if write:
    path.mkdir(parents=True, exist_ok=True)
    for stale in [path / WEIGHTS_FILE, path / INDEX_FILE,
                  *path.glob("model-?????-of-?????.safetensors")]:
      stale.unlink(missing_ok=True)  # a previous save's weights must not shadow these
  shards, current, size, total = [], {}, 0, 0  # shards: tensor names of the files written

  def flush():
    if write:
      save_file(current, str(path / f"part-{len(shards) + 1}.tmp"), metadata={"format": "pt"})
    shards.append(list(current))

  for name, array in hf_tensors(model, dtype):
    if current and size + array.nbytes > max_shard_bytes:
      flush()
      current, size = {}, 0
    current[name] = array
    size += array.nbytes
    total += array.nbytes
  flush()
  if not write:
    return
  config = hf_config(model.config, base_config)
  if dtype is not None:
    config["torch_dtype"] = dtype
  (path / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
  if len(shards) == 1:
    (path / "part-1.tmp").replace(path / WEIGHTS_FILE)
    return
  weight_map = {}
  for i, names in enumerate(shards, start=1):
    file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
    (path / f"part-{i}.tmp").replace(path / file)
    weight_map.update(dict.fromkeys(names, file))
  index = {"metadata": {"total_size": total}, "weight_map": weight_map}
  (path / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
