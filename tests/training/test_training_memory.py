"""`peak_memory_gib` in the training log: the largest peak of this process's devices, in GiB,
and no field where the backend keeps no memory statistics (the CPU backend) or refuses them."""
from nupa_jax.training import trainer


class FakeDevice:

  def __init__(self, stats):
    self.stats = stats

  def memory_stats(self):
    return self.stats


def test_peak_memory_is_the_largest_peak_of_the_local_devices(monkeypatch):
  devices = [FakeDevice({"peak_bytes_in_use": 3 * 2**29, "bytes_in_use": 2**20}),
             FakeDevice(None), FakeDevice({"peak_bytes_in_use": 5 * 2**30})]
  monkeypatch.setattr(trainer.jax, "local_devices", lambda: devices)
  assert trainer.device_memory() == {"peak_memory_gib": 5.0}


def test_no_field_without_memory_statistics(monkeypatch):
  monkeypatch.setattr(trainer.jax, "local_devices", lambda: [FakeDevice(None), FakeDevice({})])
  assert trainer.device_memory() == {}


def test_no_field_when_the_backend_refuses(monkeypatch):
  class Refusing:
    def memory_stats(self):
      raise RuntimeError("UNIMPLEMENTED: memory_stats")
  monkeypatch.setattr(trainer.jax, "local_devices", lambda: [Refusing()])
  assert trainer.device_memory() == {}
