"""How a MoE profile's tokens reach its experts: the trained router, random weights' router,
and vLLM's routing simulation (``VLLM_MOE_ROUTING_SIMULATION_STRATEGY``).

A decode step of a batch of B tokens reads the weights of every routed expert some token
picked. A trained router spreads tokens over the experts: on average, as tokens drawn
uniformly, ``E x (1 - (1 - k/E)^B)`` distinct experts of E, k a token. Random weights
(``--load-format dummy``) give every token nearly the same hidden state, so the router
picks the same k experts for all of them (the collapse vLLM's routing simulation exists
for: vllm-project/vllm#20498, "perfect load balancing in expectation ... especially when
using --load-format=dummy"). At one stream both read k experts; at a larger batch the
collapsed router reads far fewer, so a screening launch's step spends less in expert
compute and a larger share in all-reduce than the real model's: NCCL settings weigh more
there than on a full launch. With ``VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random``
vLLM draws each token's experts uniformly at random, the trained router's spread on
average: the dummy step is the real one's.

What the simulator leaves out: the FLOPs of the experts (the same for both routers; decode
is bound by reading weights), and expert parallelism's imbalance (a collapsed router under
``--enable-expert-parallel`` also loads few ranks; the same factor is applied).
``normal_routing``, vLLM's other built-in strategy, is accepted and modelled as
``uniform_random`` (its narrower spread over the experts is not).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STRATEGY_ENV = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"
STRATEGIES = ("uniform_random", "normal_routing")
"""vLLM 0.32's built-in strategies (RoutingSimulator._routing_strategies)."""


@dataclass(frozen=True)
class RoutingFigures:
    """A MoE profile's routed experts and what reading them costs a decode step."""

    experts: int
    """Routed experts of a MoE layer (config.json's n_routed_experts, num_local_experts)."""
    top_k: int
    """Experts each token picks (num_experts_per_tok)."""
    one_token_share: float
    """Share of the compute part of a one-stream step spent reading the k routed experts."""
    max_share: float = 0.8
    """The expert part's share of the compute part at most, however many experts are read
    (the rest: attention, shared experts, the lm_head, kernels)."""
    source: str = ""

    def distinct(self, batch: int) -> float:
        """Experts a trained router reads on average for ``batch`` tokens."""
        e, k = self.experts, self.top_k
        return e * (1.0 - (1.0 - k / e) ** max(1, batch))


def strategy_from_env(env: Mapping[str, str]) -> str:
    """The strategy as vLLM reads it (lower-cased; empty: the model's own router).

    ValueError, in vLLM's words, for a name vLLM does not know.
    """
    value = env.get(STRATEGY_ENV, "").lower()
    if value and value not in STRATEGIES:
        raise ValueError(
            f"Unknown routing strategy: {value}. Available strategies: {list(STRATEGIES)}"
        )
    return value


def collapsed_compute(
    figures: RoutingFigures, compute: float, compute_one: float, batch: int
) -> float:
    """The compute part of a step of ``batch`` tokens when every token picks the same k
    experts, given the trained router's ``compute`` at that batch and ``compute_one`` at
    one stream (equal at batch 1: both read k experts)."""
    if batch <= 1:
        return compute
    per_token = figures.one_token_share * compute_one
    trained = min(per_token * figures.distinct(batch) / figures.top_k, figures.max_share * compute)
    return compute - trained + min(per_token, trained)
