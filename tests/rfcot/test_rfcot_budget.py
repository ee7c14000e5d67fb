"""The context-budget tool against direct token counts, and the RF-CoT text tokenizers."""
import json
import subprocess
import sys
import zlib

import numpy as np
import pytest

from nupa_jax import rfcot
from nupa_jax import tasks
from nupa_jax.rfcot import budget
from nupa_jax.rfcot import tokenization

tokenizers = pytest.importorskip("tokenizers")

_SAMPLES = 4


@pytest.fixture(scope="module")
def bpe_file(tmp_path_factory):
  """A byte-level BPE of 400 tokens trained here on a few RF-CoT samples (no network)."""
  tok = tokenizers.Tokenizer(tokenizers.models.BPE())
  tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
  tok.decoder = tokenizers.decoders.ByteLevel()
  trainer = tokenizers.trainers.BpeTrainer(
      vocab_size=400, special_tokens=["<s>", "</s>"], show_progress=False,
      initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
  rng = np.random.default_rng(0)
  texts = []
  for task in ("add_int", "max_int", "get_digit_int"):
    a, b = tasks.get(task).sample(rng, 4)
    texts.append(rfcot.prompt(task, a, b) + rfcot.response(task, a, b))
  tok.train_from_iterator(texts, trainer)
  path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
  tok.save(str(path))
  return path


def _probe(task: str, length: int) -> list[tuple[str, str | None]]:
  """The documented probe: the first questions drawn from rng([crc32(task), length])."""
  rng = np.random.default_rng([zlib.crc32(task.encode()), length])
  return [tasks.get(task).sample(rng, length) for _ in range(_SAMPLES)]


def _table(output: str) -> dict[str, tuple[int, str, str]]:
  rows = {}
  for line in output.strip().split("\n")[2:]:
    task, digits, positions, following, _ = line.split()
    rows[task] = (int(digits), positions, following)
  return rows


def test_budget_agrees_with_a_direct_token_count(bpe_file, capsys):
  context = 1000
  budget.main(["--tokenizer", str(bpe_file), "--context", str(context),
               "--tasks", "add_int,max_int,get_digit_int", "--samples", str(_SAMPLES)])
  rows = _table(capsys.readouterr().out)
  raw = tokenizers.Tokenizer.from_file(str(bpe_file))

  def longest(task, length):  # BOS + prompt + response tokens (EOS is never read)
    return max(1 + len(raw.encode(rfcot.prompt(task, a, b), add_special_tokens=False).ids)
               + len(raw.encode(rfcot.response(task, a, b), add_special_tokens=False).ids)
               for a, b in _probe(task, length))

  assert set(rows) == {"add_int", "max_int", "get_digit_int"}
  cut = 0
  for task, (digits, positions, following) in rows.items():
    assert digits >= 1
    assert int(positions) == longest(task, digits) <= context
    assert all(longest(task, length) <= context for length in range(1, digits))
    if digits < tasks.get(task).max_digits:
      assert int(following) == longest(task, digits + 1) > context
      cut += 1
    else:
      assert following == "-"
  assert cut >= 2  # the context really cuts some tasks short


def test_budget_cli_with_the_character_tokenizer():
  """Characters are tokens: the count is BOS + the characters of prompt and response."""
  context = 1500
  out = subprocess.run([sys.executable, "-m", "nupa_jax.rfcot.budget", "--tokenizer", "char",
                        "--context", str(context), "--tasks", "add_int", "--samples", "2"],
                       capture_output=True, text=True, check=True).stdout
  digits, positions, following = _table(out)["add_int"]

  def longest(length):
    rng = np.random.default_rng([zlib.crc32(b"add_int"), length])
    questions = [tasks.get("add_int").sample(rng, length) for _ in range(2)]
    return max(1 + len(rfcot.prompt("add_int", a, b)) + len(rfcot.response("add_int", a, b))
               for a, b in questions)

  assert int(positions) == longest(digits) <= context < longest(digits + 1) == int(following)


def test_budget_rejects_unknown_tokenizers_and_tasks(capsys):
  with pytest.raises(SystemExit):
    budget.main(["--tokenizer", "llama"])
  assert "known: char, digits, or a path" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    budget.main(["--tokenizer", "char", "--tasks", "to_float_frac"])
  assert "has no RF-CoT rule" in capsys.readouterr().err


def _sample_text() -> str:
  return rfcot.prompt("add_float", "12.5", "3.75") + rfcot.response("add_float", "12.5", "3.75")


def test_char_tokenizer():
  tok = tokenization.load("char")
  text = _sample_text()
  ids = tok.encode(text)
  assert len(ids) == len(text) and tok.decode(ids) == text
  assert len({tok.pad_id, tok.bos_id, tok.eos_id}) == 3
  assert tok.decode([tok.bos_id, *ids, tok.eos_id, tok.pad_id]) == text
  with pytest.raises(ValueError, match="outside the char tokenizer's alphabet"):
    tok.encode("π")


def test_digits_tokenizer_keeps_words_whole_and_digits_single():
  tok = tokenization.load("digits")
  text = _sample_text()
  assert tok.decode(tok.encode(text)) == text
  pieces = [tok.tokens[i] for i in tok.encode("total = add_int(full1, full2) = '16250'")]
  assert pieces == ["total", " =", " add_int", "(", "full", "1", ",", " full", "2", ")", " =",
                    " '", "1", "6", "2", "5", "0", "'"]
  assert len(tok.encode(text)) < len(text) / 2
  assert tokenization.WordTokenizer().tokens == tok.tokens  # the vocabulary is fixed
  assert tok.decode(tok.encode("zebra")) == "zebra"  # unknown words fall back to characters


def test_hf_tokenizer_reads_special_tokens(bpe_file, tmp_path):
  tok = tokenization.HFTokenizer(bpe_file)
  raw = tokenizers.Tokenizer.from_file(str(bpe_file))
  assert (tok.bos_id, tok.eos_id) == (raw.token_to_id("<s>"), raw.token_to_id("</s>"))
  assert tok.pad_id == tok.eos_id  # no pad token: padding reuses EOS (never a target)
  text = _sample_text()
  assert tok.decode(tok.encode(text)) == text
  # A checkpoint directory whose tokenizer_config.json names the specials.
  (tmp_path / "tokenizer.json").write_text(bpe_file.read_text())
  (tmp_path / "tokenizer_config.json").write_text(json.dumps(
      {"bos_token": None, "eos_token": {"content": "<s>"}}))
  tok = tokenization.HFTokenizer(tmp_path)
  assert tok.eos_id == raw.token_to_id("<s>") and tok.bos_id == raw.token_to_id("<s>")
  with pytest.raises(FileNotFoundError):
    tokenization.HFTokenizer(tmp_path / "missing")
