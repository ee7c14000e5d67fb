"""Run by test_evaluation_multihost.py in fresh processes: an evaluation over a CPU mesh.

    python evaluation_multihost_main.py PROCESS_ID NUM_PROCESSES PORT DEVICES_PER_PROCESS

evaluates integer addition and maximum with a stand-in for the decoder (the true answer, its
last digit dropped where it is even) on each of two meshes of all processes' devices: rows split
over processes (`data`), and rows replicated on every device (`tensor`). Prints one JSON line:
per mesh, the ids of the answers this process wrote and the gathered summary's per-length
numbers.
"""
import json
import sys

import jax

process_id, num_processes, port, devices = map(int, sys.argv[1:])
jax.config.update("jax_num_cpu_devices", devices)
if num_processes > 1:
  jax.distributed.initialize(coordinator_address=f"localhost:{port}",
                             num_processes=num_processes, process_id=process_id)

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
from flax import nnx  # pylint: disable=g-import-not-at-top

import test_evaluator  # pylint: disable=g-import-not-at-top
from configs import common  # pylint: disable=g-import-not-at-top
from nupa_jax import sharding  # pylint: disable=g-import-not-at-top
from nupa_jax.evaluation import evaluator as evaluator_lib  # pylint: disable=g-import-not-at-top
from nupa_jax.text import Encoder  # pylint: disable=g-import-not-at-top


def shortened(answer: str) -> str:
  return answer[:-1] if int(answer) % 2 == 0 else answer


def stand_in(encoder, questions):
  """test_evaluator's oracle on global arrays: each process answers the rows of its shards."""
  answer = test_evaluator.oracle(encoder, questions, shortened)

  def generate(model, prompts, lengths, *, max_new_tokens, pad_id, **unused):
    del model, unused
    local = {(s.index[0].start or 0): (np.asarray(s.data), np.asarray(t.data))
             for s, t in zip(prompts.addressable_shards, lengths.addressable_shards)}

    def rows(index):
      return np.asarray(answer(None, *local[index[0].start or 0],
                               max_new_tokens=max_new_tokens, pad_id=pad_id))

    return jax.make_array_from_callback((prompts.shape[0], max_new_tokens), prompts.sharding,
                                        rows)

  return generate


config = common.base("tiny")
config.text.format.reverse = "none"
config.data.tasks = {"add_int": 1.0, "max_int": 1.0}
config.eval.digits = (1, 12)
config.eval.per_length = 3
config.eval.batch_size = 8  # 30 and 24 questions: batches with spare rows
encoder = Encoder()
graphdef, state = nnx.split(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
evaluator_lib.generate_lib.precompile = lambda *args, **kwargs: None
out = {"process": jax.process_index()}
for axis in ("data", "tensor"):
  evaluator = evaluator_lib.Evaluator(config, encoder, sharding.make_mesh({axis: -1}))
  evaluator_lib.generate_lib.generate = stand_in(encoder, evaluator.questions)
  records = []
  summary = evaluator.evaluate(graphdef, state, predictions=records)
  out[axis] = {"ids": [r["id"] for r in records],
               "per_digit": {task: s["per_digit"] for task, s in summary.items()}}
print(json.dumps(out))
