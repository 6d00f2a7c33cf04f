"""The study: what to launch next and when to stop.

In tiers, each importing only those before it (docs/architecture.md): ``attrs`` (the
stored names), ``effects`` (the model of what each setting did) and ``state`` (the study's
user attrs, typed), ``facts`` (what the launches measured, read from the store),
``policy`` (pure: a snapshot of the study to a decision, in one documented order), ``gate``
(the refusals before a launch) and ``suggest``, and ``run`` (join, recover, check, open,
optimize; carry out the policy's decisions). Only ``facts`` and ``run`` touch the store,
only ``run`` and ``suggest`` optuna.
"""
