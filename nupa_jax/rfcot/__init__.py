"""Rule-following chain of thought (paper §4): the rules, their traces, and RF-CoT samples.

    from nupa_jax import rfcot
    rfcot.prompt("add_int", "28", "35")        # instruction, the rule's code, the question
    rfcot.response("add_int", "28", "35")      # the rule executed step by step, then
                                               # "So the answer is 63"
    rfcot.extract_answer(generated_text)       # "63"
    rfcot.Encoder("char", context=2048)        # samples as tokens for the pipeline / evaluator

Modules: `interpreter` (executes a rule's source and writes the trace), `rules_integer`,
`rules_decimal`, `rules_fraction` (one rule per task and representation), `cot` (task -> rule,
prompt and response text), `tokenization` (char / digits / tokenizer.json), `encoding`
(token ids and the context budget), `budget` (`python -m nupa_jax.rfcot.budget`), `data` (the
RF-CoT data mode of the training pipeline), `mode` (registers it as the `rfcot` text mode).
"""
from nupa_jax.rfcot import mode
from nupa_jax.rfcot.cot import (ANSWER_PREFIX, PAPER_MAX_DIGITS, TABLE_TASKS, extract_answer,
                                names, prompt, response, rule_name, rule_text, solve)
from nupa_jax.rfcot.encoding import Encoder

__all__ = ["ANSWER_PREFIX", "Encoder", "PAPER_MAX_DIGITS", "TABLE_TASKS", "extract_answer",
           "mode", "names", "prompt", "response", "rule_name", "rule_text", "solve"]
