"""Training: `trainer.train_and_evaluate(config, workdir)`, pure jitted steps, the optimizer,
the sharded model state and the run's writers."""
