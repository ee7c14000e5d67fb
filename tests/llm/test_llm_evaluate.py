"""`python -m nupa_jax.evaluate_llm` end to end: a tiny checkpoint with a tokenizer made here,
a small built test set; replies equal transformers' greedy generations, the report equals
`benchmark score` of the predictions file, and prompts export without a model."""
import json

import numpy as np
import pytest

from nupa_jax import evaluate_llm
from nupa_jax import metrics
from nupa_jax import tasks
from nupa_jax.benchmark import build
from nupa_jax.benchmark.__main__ import main as benchmark_main
from nupa_jax.llm import prompts
import llm_testing

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
  out = tmp_path_factory.mktemp("bench")
  build.build(out, per_length=1, task_names=["add_int", "max_frac"], formats=("jsonl",),
              workers=1, progress=False)
  return out


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  directory = tmp_path_factory.mktemp("llama")
  vocab = llm_testing.write_tokenizer(directory)
  eos = transformers.PreTrainedTokenizerFast.from_pretrained(directory).eos_token_id
  model = llm_testing.hf_model("llama", vocab, eos=eos, pad=eos, seed=3)
  model.save_pretrained(directory)
  return directory, model


def read_jsonl(path):
  return [json.loads(line) for line in path.read_text().splitlines()]


def test_scores_a_checkpoint_like_benchmark_score(bench, checkpoint, tmp_path):
  directory, reference = checkpoint
  out = tmp_path / "eval"
  assert evaluate_llm.main(["--model", str(directory), "--test", str(bench), "--out", str(out),
                            "--tasks", "add_int", "--shots", "5", "--chat", "auto",
                            "--batch-size", "32", "--dtype", "float32"]) == 0
  rows = read_jsonl(out / "predictions.jsonl")
  questions = [q for q in read_jsonl(bench / "test.jsonl") if q["task"] == "add_int"]
  assert [r["id"] for r in rows] == [q["id"] for q in questions]  # 3..20 digits, one each

  # Replies are transformers' greedy continuations of the 5-shot prompt (cut where ours stop).
  tokenizer = transformers.PreTrainedTokenizerFast.from_pretrained(directory)
  shots = prompts.examples("add_int", 5)
  for row, q in list(zip(rows, questions))[::6]:
    text = prompts.text(tasks.get("add_int").prompt(q["a"], q["b"]), shots)
    ids = tokenizer(text)["input_ids"]
    continuation = llm_testing.hf_greedy(reference, ids, 48, eos=tokenizer.eos_token_id)
    expected = tokenizer.decode(continuation, skip_special_tokens=True)
    assert row["reply"] and expected.startswith(row["reply"])
    assert row["prediction"] == metrics.answer_text(row["reply"], "int")

  report = json.loads((out / "REPORT.json").read_text())
  assert benchmark_main(["score", "--test", str(bench), "--predictions",
                         str(out / "predictions.jsonl"), "--out", str(tmp_path / "R.json")]) == 0
  rescored = json.loads((tmp_path / "R.json").read_text())
  assert set(report) == {"add_int", "_meta"} and report["add_int"] == rescored["add_int"]
  assert report["_meta"]["shots"] == 5 and report["_meta"]["chat"] is False
  assert report["_meta"]["scored"] == len(questions) == sum(
      v["n"] for v in report["add_int"]["per_digit"].values())


def test_exports_prompts_for_api_models(bench, tmp_path):
  file = tmp_path / "prompts.jsonl"
  assert evaluate_llm.main(["--test", str(bench), "--export-prompts", str(file)]) == 0
  records = read_jsonl(file)
  questions = read_jsonl(bench / "test.jsonl")
  assert [r["id"] for r in records] == [q["id"] for q in questions]
  for record, q in zip(records, questions):
    assert record["prompt"] == q["prompt"]  # zero-shot: the benchmark's own prompt text
    assert record["messages"] == [{"role": "system", "content": record["system"]},
                                  {"role": "user", "content": q["prompt"]}]
  assert records[-1]["system"].endswith('format r"\\d+/\\d+".')  # max_frac answers fractions


def test_cli_errors_name_the_fix(bench, capsys):
  for args, message in [([], "needs --model DIR"),
                        (["--tasks", "sub_int", "--model", "x"],
                         "has no question of the tasks sub_int")]:
    with pytest.raises(SystemExit) as exit_info:
      evaluate_llm.main(["--test", str(bench), *args])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
  with pytest.raises(SystemExit):
    evaluate_llm.parse_args(["--test", "x", "--top-p", "0.9"])
  assert "--top-p applies to sampling" in capsys.readouterr().err
