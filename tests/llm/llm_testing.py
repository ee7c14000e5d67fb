"""Tiny Hugging Face checkpoints made in the tests: models (transformers, torch CPU) with every
parameter perturbed, and a small BPE tokenizer trained here on NUPA prompt text.

Random init leaves norm weights at one and biases at zero, where a loader that skipped or
mixed them up would still match; every parameter is redrawn so that each one matters.
"""
from __future__ import annotations

import functools
import json
import pathlib

import jax
import numpy as np
from flax import nnx

from nupa_jax.benchmark import testset

TASKS = ("add_int", "max_float")  # a 20-digit integer task and a 100-digit float task
HIDDEN, MLP, HEADS, KV_HEADS, LAYERS = 64, 96, 4, 2, 2
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
LINEAR = {"rope_type": "linear", "factor": 2.0}
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ("<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>")


def write_tokenizer(directory: pathlib.Path, chat_template: str | None = None,
                    vocab_size: int = 400) -> int:
  """A byte-level BPE with single-digit pre-tokenization (as Qwen2's) and a BOS added by the
  post-processor (as Llama 3's), trained on prompts and answers of TASKS; returns its size."""
  from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
  tokenizer = Tokenizer(models.BPE())
  tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
      pre_tokenizers.Digits(individual_digits=True),
      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
  tokenizer.decoder = decoders.ByteLevel()
  texts = [f"{q.prompt} {q.answer}\n" for task in TASKS for length in (3, 8)
           for q in testset.questions(task, length, seed=1, per_length=20)]
  trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS),
                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
  tokenizer.train_from_iterator(texts + ["user assistant system"], trainer)
  tokenizer.post_processor = processors.TemplateProcessing(
      single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
  directory.mkdir(parents=True, exist_ok=True)
  tokenizer.save(str(directory / "tokenizer.json"))
  eos = {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": False,
         "rstrip": False, "single_word": False, "special": True}  # the transformers 4 form
  config = {"bos_token": "<s>", "eos_token": eos, "pad_token": "<pad>",
            "tokenizer_class": "PreTrainedTokenizerFast"}
  if chat_template:
    config["chat_template"] = chat_template
  (directory / "tokenizer_config.json").write_text(json.dumps(config))
  return tokenizer.get_vocab_size()


def hf_model(family: str, vocab: int, rope: dict | None = None, tie: bool = False, seed: int = 0,
             eos: int = 1, pad: int = 2):
  """A tiny random LlamaForCausalLM / Qwen2ForCausalLM, every parameter ~ N(0, 0.15)."""
  import torch
  import transformers
  cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
         "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM)}[family]
  config = cls[0](vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=MLP,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  num_key_value_heads=KV_HEADS, max_position_embeddings=256, rms_norm_eps=1e-5,
                  tie_word_embeddings=tie, bos_token_id=0, eos_token_id=eos, pad_token_id=pad,
                  rope_parameters={"rope_theta": 10000.0, **(rope or {"rope_type": "default"})})
  torch.manual_seed(seed)
  model = cls[1](config).eval()
  with torch.no_grad():
    for p in model.parameters():
      p.normal_(0.0, 0.15)
  return model


def to_transformers4_config(directory: pathlib.Path) -> None:
  """Rewrites a saved config.json in the transformers 4 dialect (rope_theta, rope_scaling)."""
  config = json.loads((directory / "config.json").read_text())
  rope = config.pop("rope_parameters")
  config["rope_theta"] = rope.pop("rope_theta")
  config["rope_scaling"] = None if rope["rope_type"] == "default" else rope
  (directory / "config.json").write_text(json.dumps(config))


def hf_logits(model, tokens: np.ndarray) -> np.ndarray:
  import torch
  with torch.no_grad():
    return model(torch.from_numpy(np.asarray(tokens)).long()).logits.float().numpy()


def hf_greedy(model, prompt: list[int], new_tokens: int, eos: int) -> list[int]:
  """transformers' greedy continuation of one prompt, cut after EOS."""
  import torch
  with torch.no_grad():
    out = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                         eos_token_id=eos, pad_token_id=eos)[0, len(prompt):].tolist()
  return out[:out.index(eos) + 1] if eos in out else out


QUICK = {"xla_backend_optimization_level": 0}  # compiles twice as fast; these run little


@functools.partial(jax.jit, static_argnums=0, compiler_options=QUICK)
def _forward(graphdef, state, tokens):
  return nnx.merge(graphdef, state)(tokens)


def logits(model, tokens: np.ndarray) -> np.ndarray:
  """Our model's float32 logits, jitted (eager dispatch of a whole model is slow on CPU)."""
  return np.asarray(_forward(*nnx.split(model), np.asarray(tokens, np.int32)))
