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


@pytest.fixture(scope="module")
def bench2(tmp_path_factory):
  """Two questions a length: --per-length 1 asks half of them."""
  out = tmp_path_factory.mktemp("bench2")
  build.build(out, per_length=2, task_names=["add_int"], formats=("jsonl",), workers=1,
              progress=False)
  return out


def test_predictions_are_written_as_they_come_and_resumed(bench2, checkpoint, tmp_path,
                                                          capsys):
  directory, _ = checkpoint
  lengths = len(tasks.get("add_int").test_digits)
  args = ["--model", str(directory), "--test", str(bench2), "--per-length", "1",
          "--batch-size", "64", "--dtype", "float32"]
  whole = tmp_path / "whole"
  assert evaluate_llm.main([*args, "--out", str(whole)]) == 0
  # Up front: the questions and batches; a batch holds no more rows than there are questions.
  assert f"{lengths} questions to ask in 1 batches of {lengths} rows" in capsys.readouterr().err
  rows = read_jsonl(whole / "predictions.jsonl")
  first = {q["digits"]: q["id"] for q in reversed(read_jsonl(bench2 / "test.jsonl"))}
  assert [r["id"] for r in rows] == [first[d] for d in sorted(first)]

  # A run stopped after 7 predictions, in the middle of writing the 8th line.
  stopped = tmp_path / "stopped"
  stopped.mkdir()
  (stopped / "settings.json").write_bytes((whole / "settings.json").read_bytes())
  lines = (whole / "predictions.jsonl").read_text().splitlines(keepends=True)
  (stopped / "predictions.jsonl").write_text("".join(lines[:7]) + lines[7][:20])
  assert evaluate_llm.main([*args, "--batch-size", "4", "--out", str(stopped)]) == 0
  err = capsys.readouterr().err
  assert (f"{lengths - 7} questions to ask in {-(-(lengths - 7) // 4)} batches of 4 rows; 7 "
          "already predicted") in err
  resumed = read_jsonl(stopped / "predictions.jsonl")
  assert resumed[:7] == rows[:7] and [r["id"] for r in resumed] == [r["id"] for r in rows]
  for again, once in zip(resumed[7:], rows[7:]):  # greedy: generated as far as its batch goes
    short, long = sorted((again["reply"], once["reply"]), key=len)
    assert long.startswith(short)
  report = json.loads((stopped / "REPORT.json").read_text())
  assert (report["_meta"]["resumed"], report["_meta"]["not_asked"]) == (7, lengths)

  # benchmark score of the same questions agrees; of the whole test set, the questions not
  # asked score as empty and are named.
  for extra, missing in ((["--tasks", "add_int", "--per-length", "1"], 0), ([], lengths)):
    assert benchmark_main(["score", "--test", str(bench2), "--predictions",
                           str(stopped / "predictions.jsonl"), "--out",
                           str(tmp_path / "R.json"), *extra]) == 0
    rescored = json.loads((tmp_path / "R.json").read_text())
    assert rescored["_meta"]["missing"] == missing
    if not missing:
      assert rescored["add_int"] == report["add_int"]
  assert f"{lengths} test questions have no prediction" in capsys.readouterr().err

  # All predicted: nothing to generate; other settings are refused, the file kept.
  assert evaluate_llm.main([*args, "--out", str(stopped)]) == 0
  assert f"0 questions to ask in 0 batches; {lengths} already predicted" in (
      capsys.readouterr().err)
  with pytest.raises(SystemExit) as exit_info:
    evaluate_llm.main([*args, "--shots", "5", "--out", str(stopped)])
  assert exit_info.value.code == 2
  assert "holds predictions of other settings (shots=0)" in capsys.readouterr().err
  assert read_jsonl(stopped / "predictions.jsonl") == resumed
