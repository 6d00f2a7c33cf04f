"""A bounded LRU of prompt-block hashes: how many leading prompt tokens vLLM would not recompute.

vLLM's automatic prefix caching hashes full 16-token blocks, each hash chained to the one
before, so a hit needs the whole prefix up to that block to match. Cached prompts make
prefill cheaper and show up in ``vllm:prefix_cache_hits_total``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

BLOCK_TOKENS = 16


class PrefixCache:
    """Remembers up to ``capacity_blocks`` blocks, least recently used evicted first."""

    def __init__(self, capacity_blocks: int) -> None:
        self.capacity_blocks = max(0, capacity_blocks)
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def lookup_and_insert(self, tokens: Sequence[Hashable]) -> int:
        """Cached leading tokens of ``tokens`` (whole blocks, never the last token), then
        remember every full block of it."""
        if self.capacity_blocks == 0:
            return 0
        hits = 0
        matching = True
        prev = 0
        full = len(tokens) // BLOCK_TOKENS
        for i in range(full):
            prev = hash((prev, tuple(tokens[i * BLOCK_TOKENS : (i + 1) * BLOCK_TOKENS])))
            if matching and prev in self._blocks:
                hits += BLOCK_TOKENS
                self._blocks.move_to_end(prev)
            else:
                matching = False
                self._blocks[prev] = None
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
        # vLLM always computes the last prompt token to get logits for the first output.
        return min(hits, max(0, len(tokens) - 1))
