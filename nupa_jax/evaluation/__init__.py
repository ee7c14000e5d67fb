"""Evaluation: jitted KV-cache decoding (`generate`) and scoring on the frozen test set
(`evaluator`)."""
