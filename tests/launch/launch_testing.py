"""Shared helpers of the launch tests."""
import signal


def as_from_a_terminal() -> None:
  """`preexec_fn` of a command the tests start as a terminal would: SIGINT and SIGHUP at their
  default actions. Started in a script's background pytest ignores SIGINT, under `nohup`
  SIGHUP; its children inherit that, and the launchers keep ignoring a signal they find
  ignored (as a `nohup`'d job should), so the tests' Ctrl-C and hangup would not reach them."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)
  signal.signal(signal.SIGHUP, signal.SIG_DFL)
