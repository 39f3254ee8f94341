"""The sections of `make bench`, one module each, run in order by bench/run.py. Each has
`run(bench, ...)`: `bench` is the common.Bench of the run (its World, CA, temporary folder,
Results and started processes); what a section needs from an earlier one is passed to it by
the driver."""
