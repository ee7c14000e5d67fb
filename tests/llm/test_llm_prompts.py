"""The paper's LLM prompts (zero- and 5-shot, plain and chat), the checkpoint tokenizer, and the
text-prompt encoder, against transformers' own tokenizer and chat templating."""
import json
import pickle

import numpy as np
import pytest

from nupa_jax import tasks
from nupa_jax.llm import prompts
from nupa_jax.llm.encoding import PromptEncoder
from nupa_jax.llm.tokenizer import Tokenizer
import llm_testing

transformers = pytest.importorskip("transformers")

# A Llama-3-like template: BOS from the tokenizer config, headers, trimmed content, a guard.
HEADERS = ("{{ bos_token }}{% for m in messages %}{% if m['role'] not in ['system', 'user', "
           "'assistant'] %}{{ raise_exception('unknown role ' + m['role']) }}{% endif %}"
           "{{ '<|im_start|>' + m['role'] + '\n\n' + m['content'] | trim + '<|im_end|>' }}"
           "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n\n' }}{% endif %}")
MODEL_VOCAB = 512  # the model's embedding rows exceed the tokenizer's, as in Qwen2


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  directory = tmp_path_factory.mktemp("tokenizer")
  llm_testing.write_tokenizer(directory, chat_template=llm_testing.CHATML)
  (directory / "config.json").write_text(json.dumps({"vocab_size": MODEL_VOCAB}))
  (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": [1, 4]}))
  return directory


def reference_tokenizer(directory):
  return transformers.PreTrainedTokenizerFast.from_pretrained(directory)


def test_zero_shot_prompt_is_the_papers_text():
  question = tasks.get("add_int").prompt("12", "345")
  assert prompts.text(question) == ("Directly return the answer as an integer without any comma "
                                    "separator, like 123 . Add two numbers: 12 + 345 =")
  assert prompts.messages(question) == [{"role": "user", "content": question}]
  assert prompts.system_message("add_frac") == (
      "You are a capable math assistant. Return your solution without any process in the "
      'format: The answer is [YOUR ANSWER]. The final answer must strictly match the format '
      'r"\\d+/\\d+".')


def test_five_shots_one_per_length_solved_and_never_the_question():
  task = tasks.get("add_int")
  shots = prompts.examples("add_int", 5, seed=0)
  assert prompts.shot_lengths(task, 5) == (3, 7, 11, 16, 20)  # spread over test lengths 3-20
  for shot, length in zip(shots, (3, 7, 11, 16, 20)):
    a, b, answer = task.parse_prompt(shot.prompt + " " + shot.answer)
    assert max(len(a), len(b)) == length and int(answer) == int(a) + int(b)
  assert prompts.examples("add_int", 5, seed=0) == shots  # fixed
  first = task.parse_prompt(shots[0].prompt)[:2]
  other = prompts.examples("add_int", 5, seed=0, exclude={first})
  assert other[0] != shots[0] and other[1:] == shots[1:]
  question = task.prompt("1", "2")
  lines = prompts.text(question, shots).split("\n")
  assert lines == [f"{s.prompt} {s.answer}" for s in shots] + [question]
  turns = prompts.messages(question, shots, system="be brief")
  assert [t["role"] for t in turns] == ["system"] + ["user", "assistant"] * 5 + ["user"]
  assert turns[2] == {"role": "assistant", "content": shots[0].answer}


@pytest.mark.parametrize("template", [llm_testing.CHATML, HEADERS], ids=["chatml", "headers"])
def test_chat_templates_render_as_transformers_does(checkpoint, template, tmp_path):
  llm_testing.write_tokenizer(tmp_path, chat_template=template)
  shots = prompts.examples("max_float", 5)
  turns = prompts.messages(tasks.get("max_float").prompt("1.5", "2.25"), shots, system="hi")
  expected = reference_tokenizer(tmp_path).apply_chat_template(
      turns, tokenize=False, add_generation_prompt=True)
  assert Tokenizer(tmp_path).render_chat(turns) == expected
  if template == HEADERS:  # raise_exception reaches the caller
    with pytest.raises(ValueError, match="chat template: unknown role tool"):
      Tokenizer(tmp_path).render_chat([{"role": "tool", "content": "x"}])


def test_plain_samples_tokenize_as_transformers_with_loss_on_the_answer(checkpoint):
  encoder = PromptEncoder(str(checkpoint), chat="no")
  reference = reference_tokenizer(checkpoint)
  task = tasks.get("add_int")
  a, b = "4096", "78"
  prompt = task.prompt(a, b)
  ids, mask = encoder.encode("add_int", a, b, "4174")
  expected = reference(prompt + " 4174")["input_ids"] + [reference.eos_token_id]
  assert ids.tolist() == expected and ids.dtype == np.int32
  n = len(reference(prompt)["input_ids"])
  assert ids[0] == reference.bos_token_id and not mask[:n].any() and mask[n:].all()
  prompt_ids, prompt_mask = encoder.encode("add_int", a, b, None)
  assert prompt_ids.tolist() == expected[:n] and not prompt_mask.any()
  assert encoder.decode_answer("add_int", ids[n:]) == "4174"
  continued = encoder.tokenizer.encode(" 4174\n" + task.prompt("1", "2") + " 3")
  assert encoder.decode_answer("add_int", continued) == "4174"
  assert encoder.decode_answer("add_int", [encoder.eos_id] + continued) == ""
  assert encoder.vocab_size == MODEL_VOCAB and encoder.tokenizer.stop_ids == (1, 4)
  assert not encoder.positions("add_int", ids)["digit_index"].any()


def test_chat_and_few_shot_samples(checkpoint):
  encoder = PromptEncoder(str(checkpoint), chat="auto", shots=5)  # the checkpoint has ChatML
  assert encoder.chat
  reference = reference_tokenizer(checkpoint)
  shots = prompts.examples("max_float", 5)
  turns = prompts.messages(tasks.get("max_float").prompt("3.25", "10.5"), shots)
  text = reference.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
  ids, mask = encoder.encode("max_float", "3.25", "10.5", "10.5")
  expected = reference(text + "10.5", add_special_tokens=False)["input_ids"]
  assert ids.tolist() == expected + [reference.eos_token_id]
  n = len(reference(text, add_special_tokens=False)["input_ids"])
  assert mask.sum() == len(ids) - n and mask[n:].all()


def test_chat_needs_a_template(tmp_path):
  llm_testing.write_tokenizer(tmp_path)
  (tmp_path / "config.json").write_text(json.dumps({"vocab_size": MODEL_VOCAB}))
  assert not PromptEncoder(str(tmp_path), chat="auto").chat
  with pytest.raises(ValueError, match="has no chat template; use chat='no' or 'auto'"):
    PromptEncoder(str(tmp_path), chat="yes")


def test_encoder_survives_pickling_for_data_workers(checkpoint):
  encoder = PromptEncoder(str(checkpoint), chat="yes", shots=5)
  copy = pickle.loads(pickle.dumps(encoder))
  for a, b in (("1.5", "22.75"), ("3.0", "1.25")):
    np.testing.assert_array_equal(copy.encode("max_float", a, b, "x")[0],
                                  encoder.encode("max_float", a, b, "x")[0])


def test_prompt_ids_stay_when_the_tokenizer_merges_across_the_equals_sign(tmp_path):
  from tokenizers import Tokenizer as RustTokenizer, decoders, models
  chars = ["</s>"] + [chr(c) for c in range(32, 127)]
  vocab = {c: i for i, c in enumerate(chars)} | {"= ": len(chars)}
  rust = RustTokenizer(models.BPE(vocab, [("=", " ")]))  # no pre-tokenizer: merges cross spaces
  rust.decoder = decoders.Fuse()
  rust.add_special_tokens(["</s>"])
  rust.save(str(tmp_path / "tokenizer.json"))
  (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
  (tmp_path / "config.json").write_text(json.dumps({"vocab_size": len(vocab)}))
  encoder = PromptEncoder(str(tmp_path))
  prompt = tasks.get("add_int").prompt("4096", "78")
  joined = encoder.tokenizer.encode(prompt + " 4174")
  prompt_ids = encoder.tokenizer.encode(prompt)
  assert joined[:len(prompt_ids)] != prompt_ids  # "= " is one token in the joined text
  ids, mask = encoder.encode("add_int", "4096", "78", "4174")
  assert ids[:len(prompt_ids)].tolist() == prompt_ids and not mask[:len(prompt_ids)].any()
  assert encoder.render(ids[mask]) == " 4174" and ids[-1] == encoder.eos_id
