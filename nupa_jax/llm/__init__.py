"""Pretrained LLMs on NUPA: the paper's text prompts in a checkpoint's own tokens, scoring a
Hugging Face checkpoint on the test set (`python -m nupa_jax.evaluate_llm`), and the pieces of
finetuning of a checkpoint, LoRA or full (`configs/finetune.py`, `configs/rfcot.py`).
Checkpoint weights: `nupa_jax.models.hf`.

  tokenizer.py   tokenizer.json, special tokens, chat template (jinja2)
  prompts.py     zero- / 5-shot prompts, plain or chat; reading an answer out of a reply
  encoding.py    PromptEncoder: the text.Encoder interface for the data pipeline / evaluator
  evaluation.py  generate, score, write predictions.jsonl + REPORT.json; export prompts
  finetune.py    the adapted model, its sharded state from the checkpoint, merged export
  mode.py        registers the `hf` text mode and the `pretrained` model source (runmode)
"""
from nupa_jax.llm import mode
