"""Experiment configs, one file per ablation family: `--config=configs/FAMILY.py:ARGS`."""
