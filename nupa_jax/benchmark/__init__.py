"""The NUPA benchmark without a model: freeze the test set, score anyone's predictions.

`python -m nupa_jax.benchmark build --out DIR` writes the test set (JSONL and TFDS);
`python -m nupa_jax.benchmark score --test DIR --predictions FILE.jsonl` scores predictions.
In memory, `testset.questions` / `testset.iter_test_set` give the same questions.
"""
