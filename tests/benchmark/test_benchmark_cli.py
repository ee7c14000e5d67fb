"""`python -m nupa_jax.benchmark build|score` end to end on a small test set."""
import collections
import json
import pathlib
import subprocess
import sys

import grain
import pytest
import tensorflow_datasets as tfds

from nupa_jax import metrics
from nupa_jax import tasks
from nupa_jax.benchmark import files
from nupa_jax.benchmark import testset
from nupa_jax.benchmark.__main__ import main
from nupa_jax.benchmark.nupa_test import nupa_test_dataset_builder as nupa_test

ROOT = pathlib.Path(__file__).resolve().parents[2]
# One task per representation and both tiers; fractions reach 1 digit, floats 100.
TASKS = ("add_int", "max_frac", "length_float", "sig_int", "truediv_int")
PER_LENGTH = 4


def run_cli(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-m", "nupa_jax.benchmark", *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=300)


def read_jsonl(path: pathlib.Path) -> list[dict]:
  return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> pathlib.Path:
  """The CLI's build: two worker processes, every format."""
  out = tmp_path_factory.mktemp("built")
  result = run_cli("build", "--out", str(out), "--per-length", str(PER_LENGTH),
                   "--tasks", ",".join(TASKS), "--workers", "2")
  assert result.returncode == 0, result.stderr
  assert "%" in result.stderr  # the progress bar
  return out


def all_files(root: pathlib.Path) -> dict[str, bytes]:
  return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_identical_bytes(built, tmp_path):
  # First another build in the same directory, which the second one must replace entirely.
  assert main(["build", "--out", str(tmp_path), "--per-length", "2", "--seed", "1",
               "--tasks", "add_int,min_int", "--workers", "1"]) == 0
  # In process, one worker, tasks named in another order and by an official alias.
  names = ["truediv_int", "sig_Integer_int_ScientificNotation", *TASKS[:3]]
  assert main(["build", "--out", str(tmp_path), "--per-length", str(PER_LENGTH), "--tasks",
               ",".join(names), "--workers", "1"]) == 0
  expected = all_files(built)
  assert {"test.jsonl", "nupa_test/1.0.0/dataset_info.json"} <= set(expected)
  assert all_files(tmp_path) == expected


def check_cells(rows: list[dict], names: tuple[str, ...], per_length: int) -> None:
  """Every test length of every task is there, with distinct, correctly solved questions."""
  cells = collections.defaultdict(list)
  for row in rows:
    cells[row["task"], row["digits"]].append(row)
  for name in names:
    task = tasks.get(name)
    assert sorted(d for t, d in cells if t == name) == list(task.test_digits)
  for (name, digits), cell in cells.items():
    task = tasks.get(name)
    assert [row["id"] for row in cell] == [f"{name}/{digits}/{i}" for i in range(len(cell))]
    assert len({(row["a"], row["b"]) for row in cell}) == len(cell) <= per_length
    for row in cell:
      assert row["answer"] == task.solve(row["a"], row["b"])
      assert row["prompt"] == task.prompt(row["a"], row["b"])
      assert task.length(row["a"], row["b"]) == digits
      assert row["bucket"] == metrics.bucket(digits, task.max_digits)
      assert (row["b"] is None) == task.unary


def test_jsonl_holds_the_in_memory_test_set(built):
  rows = read_jsonl(built / "test.jsonl")
  assert [list(row) for row in rows[:1]] == [list(testset.FIELDS)]
  assert rows == [q._asdict() for q in testset.iter_test_set(TASKS, 0, PER_LENGTH)]
  check_cells(rows, TASKS, PER_LENGTH)
  assert len(rows) == PER_LENGTH * sum(len(tasks.get(name).test_digits) for name in TASKS)


@pytest.mark.slow
def test_every_task_builds(tmp_path):
  per_length = 50
  names = tuple(tasks.names())
  assert main(["build", "--out", str(tmp_path), "--per-length", str(per_length),
               "--format", "jsonl", "--workers", "1"]) == 0
  rows = read_jsonl(tmp_path / "test.jsonl")
  check_cells(rows, names, per_length)
  expected = per_length * sum(len(tasks.get(name).test_digits) for name in names)
  assert 0.99 * expected <= len(rows) <= expected  # a few short cells have fewer questions


def test_questions_depend_on_seed_task_and_length_only():
  one = testset.questions("add_int", 7, seed=3, per_length=50)
  assert testset.questions("add_Integer_Integer_Integer", 7, seed=3, per_length=50) == one
  assert testset.questions("add_int", 7, seed=4, per_length=50) != one
  assert testset.questions("add_int", 7, seed=3, per_length=20) == one[:20]


def test_small_question_space_is_deduplicated_not_padded():
  cell = testset.questions("max_frac", 1, per_length=5000)
  assert 0 < len(cell) < 5000
  assert len({(q.a, q.b) for q in cell}) == len(cell)


def test_tfds_reads_back_through_data_source_and_grain(built):
  expected = read_jsonl(built / "test.jsonl")
  source = tfds.data_source("nupa_test", data_dir=built, split="test", download=False)
  assert len(source) == len(expected)
  from_tfds = [nupa_test.from_record(source[i])._asdict() for i in range(len(source))]
  assert from_tfds == expected
  dataset = grain.MapDataset.source(source).map(nupa_test.from_record)
  assert [dataset[i].id for i in (0, len(expected) - 1)] == [expected[0]["id"],
                                                              expected[-1]["id"]]


def test_fast_writer_matches_tfds_own_builder(tmp_path):
  names = ("add_int", "length_float")
  builder = nupa_test.Builder(data_dir=tmp_path / "plain", per_length=2, tasks=names)
  builder.download_and_prepare()
  assert main(["build", "--out", str(tmp_path / "fast"), "--per-length", "2", "--tasks",
               ",".join(names), "--format", "tfds", "--workers", "1"]) == 0
  plain, fast = (tfds.data_source("nupa_test", data_dir=tmp_path / d, split="test",
                                  download=False) for d in ("plain", "fast"))
  assert len(plain) == len(fast) > 0
  assert all(plain[i] == fast[i] for i in range(len(plain)))
  assert nupa_test.Builder.name == nupa_test.NAME


def assert_usage_error(argv: list[str]) -> None:
  with pytest.raises(SystemExit) as exit_info:
    main(argv)
  assert exit_info.value.code == 2


def write_predictions(path: pathlib.Path, rows: list[dict]) -> pathlib.Path:
  path.write_text("".join(json.dumps(row) + "\n" for row in rows))
  return path


def score(built: pathlib.Path, predictions: pathlib.Path, tmp_path: pathlib.Path, capsys,
          test: pathlib.Path | None = None) -> tuple[dict, str, str]:
  """Runs `score` in process; returns (REPORT.json, stdout, stderr)."""
  out = tmp_path / "REPORT.json"
  code = main(["score", "--test", str(test or built), "--predictions", str(predictions),
               "--out", str(out)])
  captured = capsys.readouterr()
  assert code == 0, captured.err
  return json.loads(out.read_text()), captured.out, captured.err


def test_perfect_predictions_as_raw_model_text(built, tmp_path):
  rows = read_jsonl(built / "test.jsonl")
  # The whole question echoed back: the answer is found after the last "=".
  predictions = write_predictions(tmp_path / "p.jsonl", [
      {"id": row["id"], "prediction": f"{row['prompt']} {row['answer']}"} for row in rows])
  out = tmp_path / "REPORT.json"
  result = run_cli("score", "--test", str(built), "--predictions", str(predictions), "--out",
                   str(out))
  assert result.returncode == 0, result.stderr
  report = json.loads(out.read_text())
  assert sorted(report) == sorted([*TASKS, "_meta"])
  for name in TASKS:
    task = tasks.get(name)
    for b in metrics.BUCKET_NAMES:
      lengths = [d for d in task.test_digits if metrics.bucket(d, task.max_digits) == b]
      assert report[name][b] == {"exact_match": 1.0, "digit_match": 1.0, "dlength": 0.0,
                                 "n": PER_LENGTH * len(lengths)}
    assert sorted(map(int, report[name]["per_digit"])) == list(task.test_digits)
    for level in ("well_learned_digits", "performance_preserving_digits"):
      assert report[name][level] == dict.fromkeys(metrics.METRICS, max(task.test_digits))
  assert report["_meta"]["missing"] == report["_meta"]["unknown"] == 0
  assert "add_int" in result.stdout and "XL" in result.stdout


def test_empty_predictions_score_zero_with_dlength_of_the_answer(built, tmp_path, capsys):
  rows = read_jsonl(built / "test.jsonl")
  predictions = write_predictions(tmp_path / "p.jsonl",
                                  [{"id": row["id"], "prediction": ""} for row in rows])
  report, _, _ = score(built, predictions, tmp_path, capsys)
  digits = collections.defaultdict(list)
  for row in rows:
    digits[row["task"], row["bucket"]].append(sum(c.isdigit() for c in row["answer"]))
  for (name, b), counts in digits.items():
    assert report[name][b]["exact_match"] == report[name][b]["digit_match"] == 0
    assert report[name][b]["dlength"] == pytest.approx(sum(counts) / len(counts))
    assert report[name]["well_learned_digits"]["exact_match"] == 0


def test_missing_and_unknown_ids_are_reported(built, tmp_path, capsys):
  rows = [row for row in read_jsonl(built / "test.jsonl") if row["task"] == "add_int"]
  dropped = [row["id"] for row in rows if row["digits"] == 20][:3]
  kept = [{"id": row["id"], "prediction": row["answer"]} for row in rows
          if row["id"] not in dropped]
  predictions = write_predictions(tmp_path / "p.jsonl",
                                  kept + [{"id": "add_int/999/0", "prediction": "1"}])
  report, _, err = score(built, predictions, tmp_path, capsys)
  assert sorted(report) == ["_meta", "add_int"]   # tasks without any prediction are left out
  meta = report["_meta"]
  assert (meta["missing"], sorted(meta["missing_ids"])) == (3, sorted(dropped))
  assert (meta["unknown"], meta["unknown_ids"]) == (1, ["add_int/999/0"])
  assert sorted(meta["tasks_without_predictions"]) == sorted(set(TASKS) - {"add_int"})
  xl = report["add_int"]["XL"]
  assert xl["exact_match"] == pytest.approx(1 - 3 / xl["n"])
  assert report["add_int"]["per_digit"]["20"]["exact_match"] == pytest.approx(1 - 3 / PER_LENGTH)
  assert "3 test questions have no prediction" in err and "add_int/999/0" in err


@pytest.mark.parametrize("lines, line, reason", [
    (['{"id": "add_int/3/0", "prediction": "1"}', "not json"], 2, "not a JSON line"),
    (['{"id": "add_int/3/0"}'], 1, '"prediction"'),
    (['{"id": 7, "prediction": "1"}'], 1, '"id"'),
    (["", '{"id": "a", "prediction": "1"}', '{"id": "a", "prediction": "2"}'], 3, "second"),
])
def test_malformed_prediction_file_names_file_and_line(built, tmp_path, capsys, lines, line,
                                                       reason):
  predictions = tmp_path / "bad.jsonl"
  predictions.write_text("\n".join(lines) + "\n")
  assert_usage_error(["score", "--test", str(built), "--predictions", str(predictions)])
  err = capsys.readouterr().err
  assert f"{predictions}:{line}:" in err and reason in err


def test_malformed_prediction_file_exits_nonzero(built, tmp_path):
  predictions = tmp_path / "bad.jsonl"
  predictions.write_text('{"id": "add_int/3/0", "prediction": "1"}\n{"id": \n')
  result = run_cli("score", "--test", str(built), "--predictions", str(predictions))
  assert result.returncode == 2 and f"{predictions}:2:" in result.stderr
  assert len(result.stderr.splitlines()) == 1


def test_no_matching_prediction_is_an_error(built, tmp_path, capsys):
  predictions = write_predictions(tmp_path / "p.jsonl", [{"id": "x", "prediction": "1"}])
  assert_usage_error(["score", "--test", str(built), "--predictions", str(predictions)])
  assert "ids look like 'add_int/3/0'" in capsys.readouterr().err


def test_missing_test_set_says_how_to_build_one(tmp_path, capsys):
  predictions = write_predictions(tmp_path / "p.jsonl", [{"id": "x", "prediction": "1"}])
  assert_usage_error(["score", "--test", str(tmp_path / "none"), "--predictions",
                      str(predictions)])
  assert "python -m nupa_jax.benchmark build --out" in capsys.readouterr().err
  assert not (tmp_path / "none").exists()


def test_scores_a_tfds_only_test_set(built, tmp_path, capsys):
  test = tmp_path / "tfds_only"
  assert main(["build", "--out", str(test), "--per-length", str(PER_LENGTH), "--tasks",
               ",".join(TASKS), "--format", "tfds", "--workers", "1"]) == 0
  assert not (test / "test.jsonl").exists()
  rows = read_jsonl(built / "test.jsonl")
  predictions = write_predictions(tmp_path / "p.jsonl", [
      {"id": row["id"], "prediction": row["answer"][:-1]} for row in rows[::3]])
  from_jsonl, _, _ = score(built, predictions, tmp_path, capsys)
  from_tfds, _, _ = score(built, predictions, tmp_path, capsys, test=test)
  assert from_tfds.pop("_meta")["scored"] == from_jsonl.pop("_meta")["scored"] > 0
  assert from_tfds == from_jsonl


def test_run_on_replies_are_read_up_to_their_first_answer(built, tmp_path, capsys):
  """A base model's raw reply goes on with a new question of its own: its answer is the first
  one, as evaluate_llm reads it, not the last `=`'s. A sign makes an answer wrong."""
  rows = {row["id"]: row for row in read_jsonl(built / "test.jsonl")
          if row["task"] == "add_int" and row["digits"] <= 4}
  ids = sorted(rows)  # add_int/3/0..3, add_int/4/0..3: the S bucket
  right, negative, wrong_digit = ids[:4], ids[4:6], ids[6:]
  lines = [{"id": i, "prediction": f" {rows[i]['answer']}\nAdd two numbers: 966 + 85 = 7"}
           for i in right]
  lines += [{"id": i, "prediction": f"{rows[i]['prompt']} -{rows[i]['answer']}\n= 1"}
            for i in negative]
  # The last digit changed: every other digit matches, and the length is right.
  lines += [{"id": i, "prediction": " " + rows[i]["answer"][:-1]
             + str((int(rows[i]["answer"][-1]) + 1) % 10) + "\n= " + rows[i]["answer"]}
            for i in wrong_digit]
  report, _, _ = score(built, write_predictions(tmp_path / "p.jsonl", lines), tmp_path, capsys)
  answer_digits = {i: len(rows[i]["answer"]) for i in ids}
  expected_dm = (4 + sum((answer_digits[i] - 1) / answer_digits[i] for i in wrong_digit)) / 8
  s_bucket = report["add_int"]["S"]
  assert s_bucket["n"] == 8 and s_bucket["exact_match"] == 4 / 8
  assert s_bucket["digit_match"] == pytest.approx(expected_dm)
  assert s_bucket["dlength"] == pytest.approx(sum(answer_digits[i] for i in negative) / 8)


def test_score_tasks_and_per_length_score_the_first_questions_of_each_length(built, tmp_path,
                                                                            capsys):
  digits = tasks.get("add_int").test_digits
  selected, held = files.select_questions(built, ["add_int"], per_length=2)
  assert held == PER_LENGTH * len(digits)
  assert [q.id for q in selected["add_int"]] == [f"add_int/{d}/{i}" for d in digits
                                                 for i in (0, 1)]
  # Right answers for the selected questions, wrong ones for the others: a full score.
  rows = [row for row in read_jsonl(built / "test.jsonl") if row["task"] == "add_int"]
  lines = [{"id": row["id"], "prediction": row["answer"] if row["id"].endswith(("/0", "/1"))
            else "0"} for row in rows]
  predictions = write_predictions(tmp_path / "p.jsonl", lines)
  out = tmp_path / "R.json"
  assert main(["score", "--test", str(built), "--predictions", str(predictions), "--out",
               str(out), "--tasks", "add_int", "--per-length", "2"]) == 0
  report = json.loads(out.read_text())
  assert sorted(report) == ["_meta", "add_int"]
  assert all(report["add_int"][b]["exact_match"] == 1.0 for b in metrics.BUCKET_NAMES)
  assert report["_meta"]["scored"] == 2 * len(digits)
  assert report["_meta"]["unknown"] == 2 * len(digits)  # the questions left out
  assert "left out by --tasks / --per-length" in capsys.readouterr().err
