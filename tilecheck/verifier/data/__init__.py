"""The launch's data step: what the static proof leaves to the launch's own arrays."""
