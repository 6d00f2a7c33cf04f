"""The all-reduce probe: a cheap measurement before any model load (docs/probe.md).

A space file's ``probe:`` names an argv that runs with a trial's environment and prints
``{"sizes": {"<bytes>": <microseconds per all-reduce>}}``. ``spec`` lives in
tuner/space/probe_spec.py (``ProbeSpec``); this package holds the rest, one job per module:
``sizes`` (message sizes and all-reduces per token from the model's config.json),
``run`` (run a probe argv, parse its JSON), ``screen`` (the pure statistics: is a probe
slower than the default's, can NCCL settings move the objective at all, the floor),
``allreduce`` (`tuner probe allreduce`, torch.distributed), ``nccl_tests`` (an adapter
for nccl-tests' ``all_reduce_perf``); for the ceiling, ``model_config`` (the config.json
the probe reads), ``weights`` (the bytes a decode step reads per GPU), ``membw`` (`tuner
probe membw`: the GPU's memory bandwidth) and ``ceiling`` (the bound and the gap). The
sweep's use of it is tuner/study/run/probe.py.
"""
