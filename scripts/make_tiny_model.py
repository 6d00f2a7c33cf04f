"""Write a tiny random-weight Llama and its tokenizer to a directory, with no model hub.

    python scripts/make_tiny_model.py .cache/tiny-llama

The model is a real Llama architecture (hidden 128, 2 layers, 4 heads, 2 KV heads) with
random weights, and the tokenizer a byte-level BPE trained here on generated English
text, so vLLM loads and serves it like any checkpoint: fast to start on a CPU, and the
outputs are nonsense, which a benchmark does not mind. Idempotent: a stamp file records
what was built, and a second run with the same recipe returns at once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

STAMP = ".tiny-model-stamp"
RECIPE = {
    "vocab_size": 2048,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
    "dtype": "bfloat16",
    "seed": 1234,
    "revision": 1,  # bump to rebuild every existing copy
}

# Common English words (those tuner's synthetic prompts use among them): trained into the
# vocabulary as whole words, so a prompt of N words is about N tokens, as with real models.
_WORDS_TEXT = """
the of and to in is was for on that with as by at from his it an were are which this be or
has had not first one their its new after but who they have her she two been other when
there all during into school time may years more most only over city some world would where
later up such used many can state about national out known university united then made team
people three year music well film since between south north west east long group part game
work life early under high both did second also these while could home much back same end
area water day way found him each old number line name small four five six road river house
book war power side top open next left right great light place point field story art club
show set run air land sea play hand body head face eye love word note case fact form law plan
rate test data base market town king queen train ship car bus plane tree rock sand wind rain
snow fire gold iron wood glass paper stone metal food milk tea salt bread fruit green blue red
you we he me my your our them what how why yes no good bad big little very just now here
"""
_WORDS = _WORDS_TEXT.split()

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
)


def recipe_hash() -> str:
    """Identifies what this script builds: the recipe and the script itself."""
    text = json.dumps(RECIPE, sort_keys=True) + Path(__file__).read_text()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def corpus(lines: int = 4000, seed: int = 0) -> list[str]:
    """Deterministic training text: sentences of the word list, in random order."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = rng.choices(_WORDS, k=rng.randint(5, 20))
        out.append(" ".join(words).capitalize() + rng.choice([".", ".", "?", "!", ","]))
    return out


def build_tokenizer(target: Path) -> None:
    """Byte-level BPE (any text encodes), saved the way transformers and vLLM read it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=RECIPE["vocab_size"],
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=RECIPE["max_position_embeddings"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(target))


def build_model(target: Path) -> None:
    """A LlamaForCausalLM with seeded random weights, as safetensors."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(RECIPE["seed"])
    config = LlamaConfig(
        vocab_size=RECIPE["vocab_size"],
        hidden_size=RECIPE["hidden_size"],
        intermediate_size=RECIPE["intermediate_size"],
        num_hidden_layers=RECIPE["num_hidden_layers"],
        num_attention_heads=RECIPE["num_attention_heads"],
        num_key_value_heads=RECIPE["num_key_value_heads"],
        max_position_embeddings=RECIPE["max_position_embeddings"],
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(getattr(torch, RECIPE["dtype"]))
    model.save_pretrained(str(target), safe_serialization=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path, help="directory to write the model to")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args(argv)
    target: Path = args.target
    stamp = target / STAMP
    wanted = recipe_hash()
    if not args.force and stamp.is_file() and stamp.read_text().strip() == wanted:
        print(f"[make_tiny_model] {target} is up to date")
        return 0
    started = time.monotonic()
    # Build beside the target and move it in whole: an interrupted build never looks done.
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        _remove_tree(partial)
    partial.mkdir(parents=True)
    build_tokenizer(partial)
    build_model(partial)
    (partial / STAMP).write_text(wanted + "\n")
    if target.exists():
        _remove_tree(target)
    partial.rename(target)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    print(
        f"[make_tiny_model] wrote {target} ({size / 1e6:.1f} MB) "
        f"in {time.monotonic() - started:.1f} s"
    )
    return 0


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


if __name__ == "__main__":
    sys.exit(main())
