"""Request bodies: deterministic synthetic prompts of a requested length, or prompts from JSONL.

Synthetic prompts are common English words, each one token with a leading space in the
usual BPE vocabularies, so ``prompt_tokens`` words make about that many tokens (the
server's ``usage`` gives the exact count; chat templates add a few). Every request index
gets its own words from the start, so no two prompts share a prefix a server could cache,
and the same seed and index always give the same prompt.

A prompts file holds one JSON object per line: ``{"prompt": "..."}`` (or ``"text"``) or
``{"messages": [...]}``, optionally with ``"max_tokens"``. Request ``i`` uses line
``i mod n``, in file order.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError

_WORDS_TEXT = (
    "the of and to in is was for on that with as by at from his it an were are which this be "
    "or has had not first one their its new after but who they have her she two been other "
    "when there all during into school time may years more most only over city some world "
    "would where later up such used many can state about national out known university "
    "united then made team can people three year music well film since between south north "
    "west east long group part game work life early under high both did year second also "
    "these while could home much back same end area water day way found him each old number "
    "line name small three four five six road river house book war power side top open next "
    "left right great light place point field story art club show set run air land sea play "
    "hand body head face eye love love word note case fact form law plan rate test data base "
    "market city town king queen road train ship car bus plane tree rock sand wind rain snow "
    "fire gold iron wood glass paper stone metal food milk tea salt bread fruit green blue red"
)
_WORDS = _WORDS_TEXT.split()
_VOCAB = tuple(dict.fromkeys(_WORDS))  # unique, in order: the same on every run


@dataclass(frozen=True)
class Prompt:
    """One request's input: a completion prompt or chat messages, and its expected size."""

    prompt: str | None
    messages: tuple[dict[str, Any], ...] | None
    tokens: int
    max_tokens: int | None = None


def synthetic_prompt(tokens: int, index: int, seed: int = 0) -> str:
    """``tokens`` words, the same for the same (seed, index), different across indexes."""
    rng = random.Random(f"tuner-{seed}-{index}")
    return " ".join(rng.choices(_VOCAB, k=tokens))


def load_prompts(path: str | Path) -> list[Prompt]:
    """Read a JSONL prompts file; ConfigError naming the line when one is wrong."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read prompts file: {exc}") from exc
    prompts = [
        _prompt_line(file, number, line) for number, line in enumerate(lines, 1) if line.strip()
    ]
    if not prompts:
        raise ConfigError(f"{file}: the prompts file has no prompts")
    return prompts


def _prompt_line(file: Path, number: int, line: str) -> Prompt:
    where = f"{file}:{number}"
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"{where}: not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: each line is an object with 'prompt' or 'messages'")
    max_tokens = obj.get("max_tokens", obj.get("output_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ConfigError(f"{where}: 'max_tokens' must be a positive integer")
    text = obj.get("prompt", obj.get("text"))
    if isinstance(text, str):
        return Prompt(text, None, _estimate_tokens(text), max_tokens)
    messages = obj.get("messages")
    if isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages):
        size = sum(_estimate_tokens(str(m.get("content", ""))) for m in messages)
        return Prompt(None, tuple(messages), size, max_tokens)
    raise ConfigError(f"{where}: needs 'prompt' (a string) or 'messages' (a list of objects)")


def _estimate_tokens(text: str) -> int:
    # About four characters per token in English; only used when the server sends no usage.
    return max(1, len(text) // 4)


class BodyBuilder:
    """JSON bodies for one load: the same model, limits and API for every request."""

    def __init__(
        self,
        *,
        api: str,
        model: str,
        prompt_tokens: int,
        max_tokens: int,
        ignore_eos: bool,
        seed: int,
        prompts: list[Prompt] | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.api = api
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.ignore_eos = ignore_eos
        self.seed = seed
        self.prompts = prompts
        self.extra_body = extra_body or {}

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.api == "chat" else "/v1/completions"

    def prompt(self, index: int) -> Prompt:
        if self.prompts:
            return self.prompts[index % len(self.prompts)]
        text = synthetic_prompt(self.prompt_tokens, index, self.seed)
        return Prompt(text, None, self.prompt_tokens)

    def body(self, index: int) -> tuple[bytes, int]:
        """The JSON body of request ``index`` and the prompt tokens it is expected to have."""
        prompt = self.prompt(index)
        max_tokens = prompt.max_tokens or self.max_tokens
        body: dict[str, Any] = {"model": self.model}
        if self.api == "chat":
            messages = (
                list(prompt.messages)
                if prompt.messages is not None
                else [{"role": "user", "content": prompt.prompt}]
            )
            body["messages"] = messages
            body["max_completion_tokens"] = max_tokens
        else:
            if prompt.prompt is None:
                raise ConfigError("a prompts file with 'messages' needs the chat API (--api chat)")
            body["prompt"] = prompt.prompt
            body["max_tokens"] = max_tokens
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if self.ignore_eos:
            body["ignore_eos"] = True
        body.update(self.extra_body)
        return json.dumps(body, separators=(",", ":")).encode(), prompt.tokens
