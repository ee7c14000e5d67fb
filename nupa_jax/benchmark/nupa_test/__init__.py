"""TFDS builder of the frozen NUPA test set (`tfds.data_source("nupa_test", data_dir=...)`)."""
