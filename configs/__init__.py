"""Experiment configs: one file per ablation family, loaded with `--config=configs/FAMILY.py:ARGS`."""
