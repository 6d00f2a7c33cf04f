"""Every optuna user attr tuner writes, and the names stored in them: roles, proposers, stops.

optuna-dashboard, ``tuner trials`` and a resumed or second worker read these names from
the storage, so they are part of the stored format: renaming one orphans old studies.
Every module that writes or compares a role, a proposer or a stop reason uses the
constants below, never the literal text. tuner/study/state.py reads the study attrs
into one typed object.
"""

from __future__ import annotations

from typing import Final, Literal

# --- trial attrs ------------------------------------------------------------------------
ROLE: Final = "tuner_role"
"""Why the trial was launched: one of ``Role``."""
PARAMS: Final = "tuner_params"
"""Every param's value, ``default`` included (optuna omits range defaults)."""
CONFIG: Final = "tuner_config"
"""The configuration's hash (``Settings.config_hash``)."""
LAUNCHED: Final = "tuner_launched"
"""True once a server was started for the trial; False when refused before a launch."""
REASON: Final = "tuner_reason"
"""Why the trial failed, was pruned or was not launched."""
WORKER: Final = "tuner_worker"
"""The tuner process that ran it, ``host:pid:start`` (see ``recovery.worker_id``)."""
HOST: Final = "tuner_host"
"""The host the trial ran on."""
FINGERPRINT: Final = "tuner_fingerprint"
"""The hardware fingerprint of that host (tuner/telemetry/fingerprint.py, its digest)."""
CLAIM: Final = "tuner_claim"
"""Of a trial queued under a claim (tuner/study/run/queue.py ``Claims``): ``kind:key`` of the
claim, so the study says whether a claimed launch was queued (a dead worker's claim on a
launch no trial carries expires)."""
RETRY_OF: Final = "tuner_retry_of"
"""Of a trial queued again after its worker died, or after its launch failed for a cause
that may be chance (a timeout, a crash: tuner/study/policy/failed_before.py): the number
of the trial it repeats."""
FAILURE_CAUSE: Final = "tuner_failure_cause"
"""Of a trial whose launch failed: its cause (tuner/launcher/failure_cause.py: ``oom_load``,
``oom_kv_cache``, ``oom_graph_capture``, ``nccl_error``, ``flag_refused``, ``timeout``,
``crash``, ``port_taken``, ``interrupted``), which the search learns from."""
FAILURE_RETRY: Final = "failure_retry"
"""The claim kind of a failed launch queued once more (keyed by the failed trial's number)."""
CUT_SHORT: Final = "tuner_interrupted"
"""Of a trial: True when its launch was cut short from outside (Ctrl-C, SIGTERM, a dead
worker): not charged to --trials, and run again when the study resumes."""
PROPOSER: Final = "tuner_proposer"
"""Of a search trial: who proposed it, one of ``Proposer``."""
CONSTRAINTS: Final = "tuner_constraints"
"""Of a launched trial: per ``objective.subject_to`` limit (its text), this launch's value
minus the limit (<= 0 meets it). The same values are the trial's optuna constraints
(``Trial.set_constraint``), which optuna's samplers read (tuner/study/run/trial.py)."""
SECONDS_TO_HEALTHY: Final = "seconds_to_healthy"
VERDICT: Final = "tuner_verdict"
"""Of a trial: its launch against the defaults when it was measured (study/run/verdicts.py)."""
# The headline metrics of the objective's level (``LaunchOutcome.headline``, named in
# tuner/trial/runner.py HEADLINE_METRICS) are trial attrs too, for optuna-dashboard.

# --- study attrs ------------------------------------------------------------------------
INCUMBENT: Final = "tuner_incumbent"
"""The configuration whose significant gains reset the patience."""
LAST_GAIN_TRIAL: Final = "tuner_last_gain_trial"
"""The trial number at which the incumbent last improved beyond the noise."""
RECOMMENDABLE: Final = "tuner_recommendable"
"""Several objectives: the configurations that beat the defaults on one objective and are
worse on none, on the front (tuner/study/policy/pareto_goal.py); a new member resets patience."""
SIMPLIFIED: Final = "tuner_simplified"
"""The best configurations a simpler form was already launched for."""
STOP_REASON: Final = "stop_reason"
STOP_DETAIL: Final = "stop_detail"
STOPPED_BY: Final = "tuner_stopped_by"
"""The worker that recorded the stop and the number of trials then (``worker#n``): a
change tells the other workers of the study that it has stopped."""
NOISE_REL_SD: Final = "noise_between_launches_rel_sd"
LABEL: Final = "tuner_label"
"""A name to show for the study beside others (`tuner compare-studies`); set by hand."""
ANSWER: Final = "tuner_verdict"
"""Of the study: the answer in one sentence, as of the end of `tuner run` or `tuner report`
(the same name as a trial's verdict, so optuna-dashboard shows both in one place)."""
PROBE_FINDING: Final = "tuner_probe_verdict"
"""Of the study: the probe's finding (what NCCL settings can do), by its stored name."""
VERDICTS: Final = "tuner_verdicts"
"""Of the study: every trial's final verdict by trial number (study/verdicts.py)."""
REPORT_ARTIFACT: Final = "tuner_report_artifact"
"""Of the study: the optuna artifact id of the latest HTML report (`tuner report`)."""
FINAL_TRIGGER: Final = "tuner_final_trigger"
"""Of the study: the stop (reason and detail) that a final comparison runs before; the study
records it once the comparison's launches are done ({} once it has)."""
PLAN: Final = "tuner_plan"
"""The cost plan, said once after the baseline launches (tuner/study/facts/plan.py, to_json)."""
FINAL_LOOKS: Final = "tuner_final_looks"
"""Of the study: the final comparison's looks, sized with the cost plan from the noise
(tuner/stats/looks.py ``LookPlan.to_json``): fixed before the comparison's first launch."""

# --- the topology (tuner/study/run/topology.py, docs/topology.md) ----------------------
TOPOLOGY: Final = "tuner_topology"
"""Of the study: the GPUs' topology at the start of `tuner run` (tuner/telemetry/topology.py,
``TopologyRead.to_json``: the pairs, or ``{"unavailable": reason}``)."""
IGNORED: Final = "tuner_ignored"
"""Of the study: the params vLLM ignores on that topology, by name: ``{"reason", "values"}``;
those values are skipped, never launched (tuner/check/custom_allreduce.py)."""

# --- the probe (tuner/study/run/probe.py, docs/probe.md) -----------------------------------
PROBE: Final = "tuner_probe"
"""Of a trial: its probe against the default's at the objective's size (numbers, verdict)."""
PROBES: Final = "tuner_probes"
"""Of the study: every probe run, by the NCCL part of its environment (the cache)."""
PROBE_PLAN: Final = "tuner_probe_plan"
"""Of the study: the sizes probed, the objective's size, all-reduces per token."""
PROBE_DISABLED: Final = "tuner_probe_disabled"
"""Of the study: why the probe is off (the default's probe failed), when it is."""
PROBE_NOMINATED: Final = "tuner_probe_nominated"
"""Of the study: True once the probe's nominee was queued (or found tried): once a study."""

# --- roles ------------------------------------------------------------------------------
Role = Literal["baseline", "search", "confirm", "simplify", "final", "bench"]
BASELINE: Final = "baseline"
SEARCH: Final = "search"
CONFIRM: Final = "confirm"
SIMPLIFY: Final = "simplify"
FINAL: Final = "final"
"""A launch of the final comparison: the candidate or the defaults, fresh, interleaved
(tuner/study/policy/final_comparison.py); the answer rests on these launches alone."""
BENCH: Final = "bench"
"""A launch recorded by ``tuner bench --record``: no optuna trial behind it."""
CHECKS: Final = frozenset({CONFIRM, SIMPLIFY, FINAL})
"""The roles of the checks before an answer: while one waits or runs, the study goes on."""

# --- fidelities (of a launch: docs/statistics.md "Screening launches") -------------------
FIDELITY: Final = "tuner_fidelity"
"""Of a trial: ``screen`` or ``full`` (tuner/study/policy/screening.py decides)."""
Fidelity = Literal["screen", "full"]
FULL: Final = "full"
"""The server as the space file starts it: the model's real weights, read from disk."""
SCREEN: Final = "screen"
"""With the space's ``screening:`` args and env added (``--load-format dummy``): it searches,
never decides."""

# --- proposers (of search trials) ---------------------------------------------------------
Proposer = Literal["local", "tpe", "probe"]
LOCAL: Final = "local"
"""The local search near the incumbent (tuner/study/policy/local_search.py)."""
TPE: Final = "tpe"
"""optuna's TPE sampler, when the local search has nothing left (or is off)."""
NOMINEE: Final = "probe"
"""The probe's nominee: every open NCCL param at its fastest value (docs/probe.md)."""

# --- stop reasons (study attr STOP_REASON, tuner_studies.stop_reason) -----------------------
StopReason = Literal[
    "budget",
    "all_failed",
    "probe",
    "exhausted",
    "plateau",
    "futile",
    "worker_budget",
    "interrupted",
    "terminated",
]
BUDGET: Final = "budget"
ALL_FAILED: Final = "all_failed"
PROBE_FROZE_ALL: Final = "probe"
"""The probe found no NCCL param can move the objective, and nothing else is searched."""
EXHAUSTED: Final = "exhausted"
PLATEAU: Final = "plateau"
FUTILE: Final = "futile"
WORKER_BUDGET: Final = "worker_budget"
"""This worker used its --worker-trials; the study goes on with the others."""
INTERRUPTED: Final = "interrupted"
TERMINATED: Final = "terminated"
LOCAL_STOPS: Final = frozenset({INTERRUPTED, TERMINATED})
"""Stops of one worker only: Ctrl-C or a signal to it does not stop the others."""
