"""`report.answers`: error kinds of predictions files, counted on hand-made answers."""
import csv
import json

import pytest

from nupa_jax import metrics
from nupa_jax.report import answers


def write(path, records):
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  return str(path)


def line(question, task, digits, answer, prediction, a="1"):
  return {"id": question, "task": task, "digits": digits, "a": a, "b": "2", "answer": answer,
          "prediction": prediction, "exact_match": float(answer == prediction)}


CONSECUTIVE = [
    line("q1", "add_int", 3, "579", "579"),  # right
    line("q2", "add_int", 3, "802", "812"),  # wrong digits
    line("q3", "add_int", 3, "1035", "135"),  # a digit dropped: wrong length
    line("q4", "add_int", 4, "4321", "4321"),  # right
    # The point moved: each part's length is wrong though the total length is right.
    line("q5", "add_float", 5, "12.345", "123.45"),
    line("q6", "add_float", 5, "1.5", ""),  # nothing of a float's form: no answer
]
# q1 right -> wrong digits (broken); q2, q3, q5 wrong -> right (fixed); q6 still wrong.
TRAINING = [line("q1", "add_int", 3, "579", "578"), line("q2", "add_int", 3, "802", "802"),
            line("q3", "add_int", 3, "1035", "1035"), line("q4", "add_int", 4, "4321", "4321"),
            line("q5", "add_float", 5, "12.345", "12.345"),
            line("q6", "add_float", 5, "1.5", "1.6")]


def test_kinds_and_changes_are_counted_by_task_and_length(tmp_path):
  files = [answers.read(write(tmp_path / f"{label}.jsonl", records), label)
           for label, records in (("consecutive", CONSECUTIVE), ("training", TRAINING))]
  counts = [tuple(row[name] for name in answers.COLUMNS) for row in answers.rows(files)]
  # label, task, digits, questions, right, no_answer, wrong_length, wrong_digits, fixed, broken
  assert counts == [
      ("consecutive", "add_float", 5, 2, 0, 1, 1, 0, "", ""),
      ("consecutive", "add_int", 3, 3, 1, 0, 1, 1, "", ""),
      ("consecutive", "add_int", 4, 1, 1, 0, 0, 0, "", ""),
      ("training", "add_float", 5, 2, 1, 0, 0, 1, 1, 0),
      ("training", "add_int", 3, 3, 2, 0, 0, 1, 2, 1),
      ("training", "add_int", 4, 1, 1, 0, 0, 0, 0, 0)]
  only_int = answers.rows(files, ["add_int"])
  assert {(r["label"], r["task"]) for r in only_int} == {("consecutive", "add_int"),
                                                        ("training", "add_int")}
  # Scored by the "total" rule the moved point has the right length; its kind does not change.
  moved = CONSECUTIVE[4]
  assert metrics.score(moved["prediction"], moved["answer"], "float", "total")["dlength"] == 0
  assert answers.kind(moved) == "wrong_length"


def test_files_that_cannot_be_compared_or_read_say_why(tmp_path):
  first = answers.read(write(tmp_path / "a.jsonl", CONSECUTIVE), "a")

  def error(records, name="b.jsonl"):
    with pytest.raises(answers.AnswersError) as caught:
      answers.rows([first, answers.read(write(tmp_path / name, records), "b")])
    return str(caught.value)

  assert "b.jsonl (b) has 5 answers and" in error(TRAINING[:5])
  assert "e.g. 'q6'" in error(TRAINING[:5])
  other_seed = [dict(TRAINING[0], a="7"), *TRAINING[1:]]
  assert "hold different questions under the id 'q1' (another test seed?)" in error(other_seed)
  with pytest.raises(answers.AnswersError, match="holds no answer of sub_int; it answers "
                     "add_float, add_int"):
    answers.rows([first], ["sub_int"])
  for name, text, message in [
      ("c.jsonl", json.dumps(CONSECUTIVE[0]) + "\n[1]\n", "c.jsonl:2: not a JSON object"),
      ("d.jsonl", '{"id": "q2", "task": "add_int"}\n', "d.jsonl:1: no digits, answer, "
       "prediction, exact_match of the right type"),
      ("e.jsonl", "\n\n", "e.jsonl: no answers"),
      ("f.jsonl", json.dumps(dict(CONSECUTIVE[0], task="add_intt")), "unknown task 'add_intt'"),
      ("g.jsonl", json.dumps(CONSECUTIVE[0]) + "\n" + json.dumps(CONSECUTIVE[0]),
       "g.jsonl:2: a second answer to 'q1'")]:
    (tmp_path / name).write_text(text)
    with pytest.raises(answers.AnswersError, match=message):
      answers.read(str(tmp_path / name), name)


def test_the_command_prints_markdown_and_writes_csv(tmp_path, capsys):
  (tmp_path / "r1").mkdir()
  (tmp_path / "r2").mkdir()
  a = write(tmp_path / "r1" / "step_7_sampled_2q.predictions.jsonl", CONSECUTIVE)
  b = write(tmp_path / "r2" / "step_7_sampled_2q_training-positions.predictions.jsonl",
            TRAINING)
  out = tmp_path / "tables" / "answers.csv"
  assert answers.main([a, b, "--out", str(out)]) == 0
  printed = capsys.readouterr().out.splitlines()
  assert printed[0] == "| " + " | ".join(answers.COLUMNS) + " |"
  assert printed[3] == "| step_7_sampled_2q | add_int | 3 | 3 | 1 | 0 | 1 | 1 |  |  |"
  with open(out, newline="") as f:
    text = f.read()
  written = list(csv.DictReader(text.splitlines()))
  assert "\r" not in text and len(written) == 6
  assert written[4]["label"] == "step_7_sampled_2q_training-positions"
  assert (written[4]["fixed"], written[4]["broken"]) == ("2", "1")
  # Evaluations of two runs share their file names: the labels are then the paths.
  assert answers.default_labels([a, a.replace("r1", "r2")]) == [a, a.replace("r1", "r2")]
  for labels, message in [(["one"], "--labels gives 1 name(s) for 2 files"),
                          (["x", "x"], "--labels repeats a name (x x)")]:
    with pytest.raises(SystemExit):
      answers.main([a, b, "--labels", *labels])
    assert message in capsys.readouterr().err
