"""Llama-style decoders in Flax NNX with swappable positional encodings, digit-token
embeddings and LoRA. `build(model_config, vocab_size, rngs=...)` is the entry point; decoding
lives in `nupa_jax.evaluation.generate`; `state` builds a run's sharded state, and `scratch`
registers the from-scratch model source (`nupa_jax.runmode`)."""
from nupa_jax.models import lora, posenc, presets, scratch, state
from nupa_jax.models.presets import PRESETS, ModelConfig, resolve
from nupa_jax.models.transformer import KVCache, Transformer, build, count_params

__all__ = ["KVCache", "ModelConfig", "PRESETS", "Transformer", "build", "count_params", "lora",
           "posenc", "presets", "resolve", "scratch", "state"]
