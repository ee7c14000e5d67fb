"""Evaluation on the frozen test set: its questions and batches (`questions`), jitted KV-cache
decoding (`generate`), the generate-and-score loop (`evaluator`), results files and tables
(`results`) and the `config.eval` settings (`settings`)."""
