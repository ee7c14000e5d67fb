"""The run-mode registry: each config resolves to one text mode and one model source."""
import ml_collections
import pytest

from nupa_jax import plugins  # pylint: disable=unused-import
from nupa_jax import runmode
from nupa_jax import text


def _config(tokenizer=None, pretrained=""):
  c = ml_collections.ConfigDict({"pretrained": pretrained})
  if tokenizer is not None:
    c.text = {"tokenizer": tokenizer}
  return c


@pytest.mark.parametrize("config, name", [
    (_config(), "digits/scratch"),
    (_config({"name": "digits", "k": 2, "align": "right"}), "digits/scratch"),
    (_config({"name": "rfcot", "text_tokenizer": "char"}), "rfcot/scratch"),
    (_config({"name": "rfcot", "text_tokenizer": "/ckpt"}, "/ckpt"), "rfcot/pretrained"),
    (_config({"name": "hf", "path": "/ckpt"}, "/ckpt"), "hf/pretrained"),
])
def test_each_kind_of_run_resolves_to_its_modes(config, name):
  assert runmode.resolve(config).name == name


def test_digit_text_mode_builds_the_digit_encoder():
  encoder = runmode.text_mode(_config({"name": "digits", "k": 2, "align": "left"})).encoder(
      _config({"name": "digits", "k": 2, "align": "left"}))
  assert isinstance(encoder, text.Encoder)
  assert encoder.fits([0] * 10_000)


class _Claiming(runmode.TextMode):
  name = "greedy"

  def claims(self, config):
    return True

  def encoder(self, config):
    raise NotImplementedError


def test_unclaimed_and_doubly_claimed_configs_name_the_fix(monkeypatch):
  with pytest.raises(ValueError, match="no registered text mode claims config.text.tokenizer "
                                       "name 'sentencepiece'; registered: digits, hf, rfcot"):
    runmode.resolve(_config({"name": "sentencepiece"}))
  monkeypatch.setitem(runmode._TEXT_MODES, "greedy", _Claiming())
  with pytest.raises(ValueError, match="claimed by several text modes: digits, greedy"):
    runmode.text_mode(_config())
