"""Design study for issue 12: can a model-led search reach its targets at 1% noise?

A standalone, seeded simulation, not the sweep: no optuna, no store. Each launch is drawn
directly from the simulator's noise-free truth (``tuner.sim.relative_speed`` via
``parse_settings``, as benchmarks/search_fake.py scores), times (1 + N(0, between)); each
of its 3 rounds is that times (1 + N(0, within)); the launch's value is the mean of its
rounds. The strategy measured, over search_spaces/sim.yaml's 8 params (18 non-default
values, NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS):

1. 2 baseline launches of the defaults.
2. Screening: K launches of a balanced design (each changes up to ``--changes`` params,
   constraints kept, every non-default value in about K * changes / 18 launches, partners
   varied; the best of many random greedy designs by the A-criterion of the one-hot model).
3. Exploit: fit tuner's own EffectModel (the sweep's spike-and-slab main-effects model) on
   every launch. The best guess takes, per param, the value with the largest posterior
   mean when the posterior P(effect > half min_gain) >= ``--bar``, else the default
   (``--hold``: a lower bar for a value the last guess held). A new best guess is launched
   ``--guess-launches`` times; then, while some single change of it (a value added,
   dropped or swapped) has a posterior chance >= ``--stop-chance`` of beating it by
   min_gain, one ``--explore`` launch follows and the model is refit: ``stack`` (the
   guess plus the ``--stack`` values likeliest to be worth half of min_gain, a group test
   on a known background), ``neighbour`` (that likeliest single change), ``thompson`` (one
   posterior draw's best configuration). The search also stops at ``--budget`` launches,
   or (``--stable N``) once the guess has held through N launches.
4. The answer: the best guess, less the settings whose P(worth > half min_gain) < 0.3,
   must beat the baseline launches by tuner.stats.compare (Welch, 95%, min_gain 1%, the
   noise pooled by between_launch_variance over the study) on its own launches, else the
   defaults are kept. ``--final fresh``: 2 launches made after the stop, used for nothing
   else; ``--final reuse``: its launches made since it became the guess, topped up to 2
   (a simplified answer is a new configuration: 2 fresh launches either way).

The defaults are the variant that did best at 1% (K=8, 6 changes, stack, 1 launch per
guess, final reuse, the model's prior effect sd 0.025 instead of tuner's 0.05); the
first pass's variant was ``--changes 5 --explore neighbour --guess-launches 2 --final
fresh --prior-sd 0.05``. The oracle line replaces step 3's guess by the true optimum
after the same screening (and the same final test): the bound that the screening and
the final test leave. About 1 s per study at 1% noise (64 posterior draws per fit).

    python benchmarks/screen_design.py                               # K=8, 1% noise
    python benchmarks/screen_design.py --screen 6,8,10 --noise 0.003,0.01,0.02 --oracle
    python benchmarks/screen_design.py --cases hidden-gain --stop-chance 0.1 --screen 10
    python benchmarks/screen_design.py --cases hidden-gain --trace   # each study's launches

``--trace`` prints each study's launches (b baseline, s screening, g best guess, e explore,
f final test; in capitals when within 2% of the optimum), its answer and last guess.

Printed per case, noise and K: the share within 2% of the optimum (flat: the defaults
kept), and launches (baseline, screening, exploit and the final test's) median/mean/p90.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuner import stats  # noqa: E402
from tuner.sim import parse_settings, relative_speed  # noqa: E402
from tuner.space.settings import (  # noqa: E402
    canonical_value,
    settings_from_params,
    violated_constraints,
)
from tuner.space.spec import Scalar, SpaceSpec, load_space  # noqa: E402
from tuner.study.effects import model as search  # noqa: E402
from tuner.study.effects.model import EffectModel, Observation, levels  # noqa: E402
from tuner.study.effects.neighbours import neighbours  # noqa: E402
from tuner.vocabulary import DEFAULT  # noqa: E402

CASES = {"flat": 1.0, "hidden-gain": 1.08, "interaction": 1.07 * 1.025}  # the optimum
WITHIN = 0.98
ROUNDS = 3
MIN_GAIN = 0.01
CONFIDENCE = 0.95
KEEP = 0.3
"""simplify: a setting whose P(worth > half min_gain) is below this is dropped."""

Params = dict[str, Scalar]
Key = tuple[tuple[str, str], ...]


def key_of(params: Mapping[str, Scalar]) -> Key:
    return tuple(sorted((n, canonical_value(v)) for n, v in params.items() if v != DEFAULT))


@dataclass
class Launch:
    params: Params
    estimate: stats.LaunchEstimate
    role: str  # b baseline, s screen, g guess, e explore, f final


@dataclass
class Study:
    spec: SpaceSpec
    case: str
    rng: np.random.Generator
    between: float
    within: float
    launches: list[Launch] = field(default_factory=list)

    def launch(self, params: Mapping[str, Scalar], role: str) -> Launch:
        true = truth(self.case, key_of(params))
        level = true * (1.0 + self.rng.normal(0.0, self.between))
        rounds = level * (1.0 + self.rng.normal(0.0, self.within, ROUNDS))
        out = Launch(dict(params), stats.launch_estimate(list(rounds)), role)
        self.launches.append(out)
        return out

    def groups(self) -> dict[Key, list[stats.LaunchEstimate]]:
        out: dict[Key, list[stats.LaunchEstimate]] = {}
        for launch in self.launches:
            out.setdefault(key_of(launch.params), []).append(launch.estimate)
        return out

    def noise(self) -> stats.NoiseEstimate:
        found = stats.between_launch_variance(self.groups().values())
        return found or stats.NoiseEstimate.prior()

    def model(self) -> EffectModel:
        """The sweep's model, every launch weighed as analysis.observations() weighs it."""
        noise = self.noise()
        model = EffectModel(self.spec)
        model.observe(
            [
                Observation(
                    params=launch.params,
                    value=launch.estimate.mean,
                    var=noise.var * launch.estimate.mean**2
                    + stats.launch_within_var(launch.estimate, noise.within_var),
                )
                for launch in self.launches
            ]
        )
        return model

    def count(self, params: Mapping[str, Scalar]) -> int:
        target = key_of(params)
        return sum(key_of(launch.params) == target for launch in self.launches)


SPEC_PATH = ROOT / "search_spaces" / "sim.yaml"


@cache
def space_spec() -> SpaceSpec:
    return load_space(SPEC_PATH).spec


@cache
def truth(case: str, key: Key) -> float:
    settings = settings_from_params(space_spec(), dict(key))
    sim = parse_settings(["--profile", case, "--port", "1", *settings.args], settings.env)
    return relative_speed(case, sim, 1)


# ----------------------------------------------------------------- the screening design


def values_of(spec: SpaceSpec) -> list[tuple[str, Scalar]]:
    return [(name, v) for name, p in spec.params.items() for v in levels(p)[1:]]


def greedy_design(spec: SpaceSpec, k: int, changes: int, rng: np.random.Generator) -> list[Params]:
    """K configurations: each launch takes the least-used values (ties at random), one
    per param, preferring partners it has not met yet; constraints kept."""
    values = values_of(spec)
    used = dict.fromkeys(range(len(values)), 0)
    met = np.zeros((len(values), len(values)))
    design: list[Params] = []
    for _ in range(k):
        chosen: list[int] = []
        for _ in range(changes):
            taken = {values[i][0] for i in chosen}
            options = []
            for i, (name, value) in enumerate(values):
                if name in taken:
                    continue
                trial = {values[j][0]: values[j][1] for j in chosen} | {name: value}
                if violated_constraints(spec, trial):
                    continue
                clash = sum(met[i, j] for j in chosen)
                options.append((used[i], clash, rng.random(), i))
            if not options:
                break
            chosen.append(min(options)[3])
        for i in chosen:
            used[i] += 1
            for j in chosen:
                if i != j:
                    met[i, j] += 1
        design.append({values[i][0]: values[i][1] for i in chosen})
    return design


def design_score(spec: SpaceSpec, design: list[Params]) -> float:
    """A-criterion of the one-hot main-effects model (2 baseline rows, ridge 0.1): the
    summed variance of the effects; smaller is better."""
    model = EffectModel(spec)
    rows = [model.features({}), model.features({})] + [model.features(c) for c in design]
    x = np.array(rows)
    return float(np.trace(np.linalg.inv(x.T @ x + 0.1 * np.eye(x.shape[1]))))


def screening_design(
    spec: SpaceSpec, k: int, changes: int, rng: np.random.Generator, tries: int = 60
) -> list[Params]:
    best = min(
        (greedy_design(spec, k, changes, rng) for _ in range(tries)),
        key=lambda d: design_score(spec, d),
    )
    return best


# ----------------------------------------------------------------- the model's decisions


def best_guess(
    model: EffectModel,
    draws: np.ndarray,
    bar: float,
    current: Params | None = None,
    hold: float | None = None,
) -> Params:
    """Per param, the value with the largest posterior mean, when it is believed in.

    A value of ``current`` (the last guess) stays while its P(worth) is ``hold`` (default:
    ``bar``) or more and it is its param's best by posterior mean: a passenger near the bar would
    otherwise flip in and out, and every new guess costs a launch."""
    half = math.log1p(MIN_GAIN) / 2
    guess: Params = {}
    means: dict[str, float] = {}
    for name, values in model.levels.items():
        scored = [
            (float(draws[:, model.index[(name, canonical_value(v))]].mean()), v) for v in values[1:]
        ]
        mean, value = max(scored, key=lambda s: s[0])
        column = model.index[(name, canonical_value(value))]
        held = current is not None and canonical_value(current.get(name, DEFAULT)) == (
            canonical_value(value)
        )
        need = hold if held and hold is not None else bar
        if float((draws[:, column] > half).mean()) >= need and mean > 0:
            guess[name] = value
            means[name] = mean
    while violated_constraints(model.spec, guess):
        names = {n for c in violated_constraints(model.spec, guess) for n in (c.left, c.right)}
        weakest = min((n for n in guess if n in names), key=lambda n: means[n])
        del guess[weakest]
    return guess


def best_neighbour(
    model: EffectModel, draws: np.ndarray, guess: Params, rng: np.random.Generator
) -> tuple[Params | None, float]:
    """The single change of ``guess`` likeliest to beat it by min_gain, and that chance."""
    full = {name: guess.get(name, DEFAULT) for name in model.spec.params}
    options = neighbours(model.spec, full, 1, rng=rng)
    if not options:
        return None, 0.0
    center = model.features(guess)
    rows = np.array([model.features(c) for c in options])
    chance = (((rows - center) @ draws.T) > math.log1p(MIN_GAIN)).mean(axis=1)
    i = int(np.argmax(chance))
    picked = {n: v for n, v in options[i].items() if v != DEFAULT}
    return picked, float(chance[i])


def stacked(
    model: EffectModel, draws: np.ndarray, guess: Params, size: int, floor: float
) -> Params | None:
    """``guess`` plus the ``size`` values (one per param, constraints kept) the model gives
    the best chance of being worth half of min_gain, ``floor`` or more: a group test on
    top of the best guess, which clears them all when it moves nothing."""
    half = math.log1p(MIN_GAIN) / 2
    ranked = sorted(
        (
            (float((draws[:, column] > half).mean()), name, value)
            for (name, value), column in model.index.items()
            if canonical_value(guess.get(name, DEFAULT)) != value
        ),
        reverse=True,
    )
    out = dict(guess)
    added: set[str] = set()
    for chance, name, value in ranked:
        if chance < floor or len(added) >= size:
            break
        if name in added:
            continue
        trial = {**out, name: value}
        if not violated_constraints(model.spec, trial):
            out, added = trial, added | {name}
    return out if added else None


def simplified(model: EffectModel, draws: np.ndarray, config: Params) -> Params:
    """``config`` less the settings whose P(worth > half min_gain) is under KEEP."""
    half = math.log1p(MIN_GAIN) / 2
    out = {
        name: value
        for name, value in config.items()
        if float((draws[:, model.index[(name, canonical_value(value))]] > half).mean()) >= KEEP
    }
    return config if violated_constraints(model.spec, out) else out


# ----------------------------------------------------------------- one study


def final_test(study: Study, config: Params, mode: str, since: int) -> bool:
    """Does ``config`` beat the baseline launches on its own launches (Welch)?"""
    target = key_of(config)
    own = [
        launch
        for launch in study.launches[since:]
        if key_of(launch.params) == target and mode == "reuse"
    ]
    while len(own) < 2:
        own.append(study.launch(config, "f"))
    noise = study.noise()
    base = [launch.estimate for launch in study.launches if launch.role == "b"]
    verdict = stats.compare(
        stats.config_estimate([launch.estimate for launch in own], noise),
        stats.config_estimate(base, noise),
        direction="maximize",
        min_gain=MIN_GAIN,
        confidence=CONFIDENCE,
    ).verdict
    return verdict == "better"


def run_study(case: str, seed: int, args: argparse.Namespace, k: int, oracle: bool) -> dict:
    spec = space_spec()
    rng = np.random.default_rng([seed, k, int(args.noise_now * 1e6)])
    study = Study(spec, case, rng, args.noise_now, args.noise_now)
    study.launch({}, "b")
    study.launch({}, "b")
    for config in screening_design(spec, k, args.changes, rng):
        study.launch(config, "s")
    if oracle:
        best = optimum_config(case)
        accepted = bool(best) and final_test(study, best, "fresh", len(study.launches))
        return summary(study, case, seed, best if accepted else {})
    guess: Params = {}
    since = len(study.launches)
    while True:
        model = study.model()
        draws = model.draws(rng, args.draws)
        new_guess = best_guess(model, draws, args.bar, guess, args.hold)
        if key_of(new_guess) != key_of(guess):
            guess, since = new_guess, len(study.launches)
        if len(study.launches) >= args.budget:
            break
        if (
            guess
            and sum(key_of(launch.params) == key_of(guess) for launch in study.launches[since:])
            < args.guess_launches
        ):
            study.launch(guess, "g")
            continue
        if args.explore == "none":
            break
        neighbour, chance = best_neighbour(model, draws, guess, rng)
        explored = sum(launch.role == "e" for launch in study.launches)
        if neighbour is None or (chance < args.stop_chance and explored >= args.min_explore):
            break
        if args.stable and len(study.launches) - since >= args.stable:
            break  # the best guess held through this many launches since it was made
        if args.explore == "thompson":
            # One posterior draw's own best configuration: a value gets launched as often
            # as the model believes it could be the best, so doubt is settled by data.
            neighbour = best_guess(model, draws[int(rng.integers(len(draws)))][None, :], 0.5)
        if args.explore == "stack":
            neighbour = stacked(model, draws, guess, args.stack, args.stack_floor) or neighbour
        study.launch(neighbour, "e")
    final = simplified(model, draws, guess) if guess else {}
    if final and key_of(final) != key_of(guess):
        since = len(study.launches)  # a new configuration: its launches are all fresh
    accepted = bool(final) and final_test(study, final, args.final, since)
    return summary(study, case, seed, final if accepted else {}, guess)


@cache
def optimum_config(case: str) -> Params:
    """The fastest configuration of the space, by the truth (the fewest settings on ties)."""
    configs: list[dict[str, Scalar]] = [dict(c) for c in all_configs()]
    return max(configs, key=lambda c: (truth(case, key_of(c)), -len(c)))


@cache
def all_configs() -> tuple[tuple[tuple[str, Scalar], ...], ...]:
    """Every valid configuration of the space (for the oracle's optimum)."""
    spec = space_spec()
    out: list[tuple[tuple[str, Scalar], ...]] = [()]
    for name, param in spec.params.items():
        out = [c + ((name, v),) if v != DEFAULT else c for c in out for v in levels(param)]
    return tuple(c for c in out if not violated_constraints(spec, dict(c)))


def summary(
    study: Study, case: str, seed: int, answer: Params, guess: Params | None = None
) -> dict:
    optimum = CASES[case]
    true = truth(case, key_of(answer))
    roles = "".join(
        launch.role.upper()
        if optimum > 1 and truth(case, key_of(launch.params)) >= WITHIN * optimum - 1e-12
        else launch.role
        for launch in study.launches
    )
    return {
        "seed": seed,
        "ok": (not answer) if case == "flat" else true >= WITHIN * optimum - 1e-12,
        "true": true,
        "launches": len(study.launches),
        "roles": roles,
        "answer": answer,
        "guess": guess,
    }


def report(label: str, case: str, rows: list[dict], seconds: float) -> None:
    n = len(rows)
    used = sorted(r["launches"] for r in rows)
    p90 = used[min(n - 1, math.ceil(0.9 * n) - 1)]
    what = "defaults kept" if case == "flat" else "within 2%"
    hits = sum(r["ok"] for r in rows)
    missed = [r["seed"] for r in rows if not r["ok"]]
    print(
        f"  {label:<8} {case:<12} {what} {hits}/{n} ({hits / n:.0%}), launches median "
        f"{statistics.median(used):g} mean {statistics.fmean(used):.1f} p90 {p90}; "
        f"missed {missed[:12]}{'...' if len(missed) > 12 else ''}; {seconds:.0f} s",
        flush=True,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="flat,hidden-gain,interaction")
    p.add_argument("--noise", default="0.01", help="rel sd of each kind, comma-separated")
    p.add_argument("--screen", default="8", help="K screening launches, comma-separated")
    p.add_argument("--changes", type=int, default=6, help="params a screening launch changes")
    p.add_argument("--bar", type=float, default=0.4, help="P(worth) for the best guess")
    p.add_argument("--hold", type=float, default=None, help="P(worth) that keeps a guessed value")
    p.add_argument("--guess-launches", type=int, default=1)
    p.add_argument("--stop-chance", type=float, default=0.05)
    p.add_argument(
        "--explore",
        choices=("neighbour", "thompson", "stack", "none"),
        default="stack",
        help="what to launch while the stop rule says go on",
    )
    p.add_argument("--stack", type=int, default=3, help="values --explore stack adds at most")
    p.add_argument("--stack-floor", type=float, default=0.1, help="P(worth) to be stacked")
    p.add_argument("--min-explore", type=int, default=0, help="explore launches before a stop")
    p.add_argument("--prior-sd", type=float, default=0.025, help="PRIOR_EFFECT_SD (tuner: 0.05)")
    p.add_argument("--prior-inclusion", type=float, default=None, help="override PRIOR_INCLUSION")
    p.add_argument("--stable", type=int, default=0, help="stop once the guess held N launches")
    p.add_argument("--budget", type=int, default=24, help="launches before the final test")
    p.add_argument("--final", choices=("fresh", "reuse"), default="reuse")
    p.add_argument("--draws", type=int, default=64, help="EffectModel posterior draws")
    p.add_argument("--studies", type=int, default=30)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--oracle", action="store_true", help="also the truth-only bound")
    p.add_argument("--trace", action="store_true")
    args = p.parse_args()
    # Variants of the model's prior, set on tuner's module for this process only.
    if args.prior_sd is not None:
        search.PRIOR_EFFECT_SD = args.prior_sd
    if args.prior_inclusion is not None:
        search.PRIOR_INCLUSION = args.prior_inclusion
    print(
        f"screen_design: changes {args.changes}, bar {args.bar}, guess launches "
        f"{args.guess_launches}, hold {args.hold}, stop chance {args.stop_chance}, "
        f"explore {args.explore}, "
        f"stack {args.stack} (floor {args.stack_floor}), min explore {args.min_explore}, "
        f"stable {args.stable}, "
        f"prior sd {search.PRIOR_EFFECT_SD}, inclusion {search.PRIOR_INCLUSION}, "
        f"budget {args.budget}, final {args.final}, draws {args.draws}, "
        f"seeds {args.first_seed}..{args.first_seed + args.studies - 1}"
    )
    seeds = range(args.first_seed, args.first_seed + args.studies)
    for noise in (float(x) for x in args.noise.split(",")):
        args.noise_now = noise
        for k in (int(x) for x in args.screen.split(",")):
            print(f"noise {noise:g} each kind, K={k}")
            for case in args.cases.split(","):
                for oracle in (False, True) if args.oracle else (False,):
                    t0 = time.monotonic()
                    rows = [run_study(case, s, args, k, oracle) for s in seeds]
                    if args.trace:
                        for r in rows:
                            print(
                                f"    seed {r['seed']:>3} {'ok  ' if r['ok'] else 'MISS'} "
                                f"{r['true']:.4f} {r['roles']} answer {key_of(r['answer'])}"
                                f" guess {key_of(r['guess'] or {})}"
                            )
                    report("oracle" if oracle else "model", case, rows, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
