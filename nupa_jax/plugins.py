"""Every kind of run, registered: importing this module gives `runmode.resolve` all of them.

Digit text and from-scratch models register with `nupa_jax.text` and `nupa_jax.models`, which
every run imports; RF-CoT traces and pretrained checkpoints register with their packages, which
the trainer and `saved_run` (evaluate) import through this module.
"""
from nupa_jax import llm
from nupa_jax import models
from nupa_jax import rfcot
from nupa_jax import text

__all__ = ["llm", "models", "rfcot", "text"]
