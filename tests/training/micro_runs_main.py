"""Trains the micro config once for each (workdir, overrides) pair of its argument, a Python
literal, one after another in this process (training_testing.train_in_one_process).

    micro_runs_main.py "[(WORKDIR, {KEY: VALUE, ...}), ...]"
"""
import ast
import sys

import training_testing

if __name__ == "__main__":
  for workdir, overrides in ast.literal_eval(sys.argv[1]):
    training_testing.train(workdir, **overrides)
