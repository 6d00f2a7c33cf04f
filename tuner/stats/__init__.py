"""Statistics that tell a real gain from noise: pure functions over numbers, no I/O.

One module per job: ``student_t`` (the t distribution, so the package needs no scipy),
``estimates`` (launches, between-launch noise, a configuration's mean and error),
``compare`` (the Welch verdict and pruning), ``final`` (the final comparison on fresh
launches, the answer's test), ``recommend`` (what to recommend and why), ``wording``
(figures in sentences), ``binomial`` (exact bounds of a proportion, for the benchmarks).
docs/statistics.md explains the model.
"""

from tuner.stats.binomial import clopper_pearson_lower, clopper_pearson_upper
from tuner.stats.compare import (
    Comparison,
    Direction,
    Verdict,
    compare,
    is_significant_gain,
    should_prune,
)
from tuner.stats.estimates import (
    ConfigEstimate,
    LaunchEstimate,
    NoiseEstimate,
    between_launch_variance,
    config_estimate,
    launch_estimate,
    launch_within_var,
    mean_se,
)
from tuner.stats.final import (
    FinalComparison,
    FinalNoise,
    adjusted_confidence,
    final_comparison,
    final_noise,
)
from tuner.stats.recommend import (
    CONFIRMED,
    NO_GAIN,
    NOT_SETTLED,
    Candidate,
    Recommendation,
    Unsettled,
    recommend,
)

__all__ = [
    "CONFIRMED",
    "NOT_SETTLED",
    "NO_GAIN",
    "Unsettled",
    "Candidate",
    "Comparison",
    "ConfigEstimate",
    "Direction",
    "FinalComparison",
    "FinalNoise",
    "LaunchEstimate",
    "NoiseEstimate",
    "Recommendation",
    "Verdict",
    "adjusted_confidence",
    "between_launch_variance",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "compare",
    "config_estimate",
    "final_comparison",
    "final_noise",
    "is_significant_gain",
    "launch_estimate",
    "launch_within_var",
    "mean_se",
    "recommend",
    "should_prune",
]
