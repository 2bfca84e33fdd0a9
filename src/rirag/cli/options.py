"""Every option the ``rirag`` subcommands share, defined once, and the argparse types that check them.

Each ``type=`` is a typed validator of :mod:`rirag.validation` wrapped by :func:`argtype`, so a bad value is refused
when it is parsed, as argparse's one line (``rirag retrieve: error: argument --k: ...``) and exit status
:data:`~rirag.exit_codes.EXIT_USAGE`; the options that allocate are bounded by :data:`rirag.validation.LIMITS`.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from rirag import validation as check
from rirag.constants import MAX_INPUT_BYTES, SEED
from rirag.data.splits import LEAKAGE_FREE_SPLITS, ORIGINAL_SPLITS, check_split_name
from rirag.errors import DataError, UsageError
from rirag.exit_codes import EXIT_USAGE
from rirag.generation.base import (
    BATCH_SIZE,
    DEFAULT_GENERATOR,
    ENDPOINT,
    ENDPOINT_API_KEY_ENV,
    ENDPOINT_CONCURRENCY,
    ENDPOINT_MAX_RETRIES,
    EXTRACTIVE,
    FOCUSED,
    MAX_NEW_TOKENS,
)
from rirag.generation.focused.config import FocusedConfig, switch_fields
from rirag.generation.job import GENERATOR_LIMITS
from rirag.generation.prompts import STRATEGIES, ZERO_SHOT
from rirag.generation.registry import ANSWERERS, LANGUAGE_MODEL_KIND
from rirag.retrieval.registry import RETRIEVERS, every_option, option_pair


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block): 'rirag retrieve: error: argument --k: ...'."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


# -- argparse types -----------------------------------------------------------------------------------------------


def argtype(validator: Callable[[Any, str], Any], name: str) -> Callable[[str], Any]:
    """An argparse ``type=`` of a :mod:`rirag.validation` check: argparse reports its
    :class:`~rirag.errors.UsageError` as 'argument --x: message'."""
    def parse(value: str):
        try:
            return validator(value, "value")
        except UsageError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix("value: ")) from None

    parse.__name__ = name
    return parse


system_name = argtype(check.word, "system name")
#: ``--seed``: any integer.
seed_value = argtype(check.integer, "integer")
#: ``--k``: passages per question, 1 to the corpus size (checked again once the corpus loads).
k_value = argtype(check.int_between(1, "k"), "passages per question")


def bounded_int(limit: str, minimum: int = 1) -> Callable[[str], int]:
    """argparse ``type=`` of an option bounded by :data:`rirag.validation.LIMITS` ``limit`` (or ``workers``)."""
    return argtype(check.int_between(minimum, limit), limit.replace("_", " "))


def auto_or(auto: str, limit: str) -> Callable[[str], int | str]:
    """argparse ``type=`` of an option that is ``auto`` or an integer from 1 to the bound ``limit``."""
    bounded = check.int_between(1, limit)

    def parse(value: str) -> int | str:
        if value == auto:
            return value
        try:
            return bounded(value, "value")
        except UsageError as err:
            message = str(err).removeprefix("value: ")
            raise argparse.ArgumentTypeError(message.replace(", got ", f" or {auto!r}, got ", 1)) from None

    parse.__name__ = f"{limit.replace('_', ' ')} or {auto}"
    return parse


def split_name(value: str) -> str:
    """argparse type of ``--split``: one of :data:`rirag.data.splits.SPLIT_NAMES`, the same list its help shows."""
    try:
        return check_split_name(value)
    except DataError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def split_help(extra: str = "") -> str:
    """The help of ``--split``, naming every split :func:`split_name` accepts."""
    return (f"one of {', '.join(ORIGINAL_SPLITS)} (published; original-train only where the data has it) or "
            f"{', '.join(LEAKAGE_FREE_SPLITS)} (the leakage-free re-split){extra}")


def parse_option(item: str) -> tuple[str, Any]:
    """argparse type of ``--option KEY=VALUE``: :func:`rirag.retrieval.registry.option_pair` (the key known, the
    value of its type and range) with argparse's error reporting."""
    try:
        return option_pair(item)
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# -- options shared by several subcommands --------------------------------------------------------------------------

DATA_HELP = "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR, else the Hub dataset RegNLP/ObliQA)"


def add_data_option(p: argparse.ArgumentParser, help: str = DATA_HELP) -> None:
    p.add_argument("--data", default=None, help=help)


def add_seed_option(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument("--seed", type=seed_value, default=SEED, help=help)


def add_split_option(p: argparse.ArgumentParser, required: bool = True, extra: str = "") -> None:
    """``--split`` (checked when parsed, the splits listed in the help) and the ``--seed`` of the re-split."""
    if required:
        p.add_argument("--split", required=True, type=split_name, help=split_help(extra))
    else:
        p.add_argument("--split", default=None, type=split_name, help=split_help(extra))
    add_seed_option(p, help="seed of the leakage-free re-split")


def add_k_option(p: argparse.ArgumentParser, default: int | None, help: str) -> None:
    """``--k``; its default is a :class:`~rirag.validation.DefaultK`, fitted to a smaller corpus instead of refused."""
    p.add_argument("--k", type=k_value, default=None if default is None else check.DefaultK(default), help=help)


def add_system_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--system", type=system_name, default=None,
                   help="system name in the run, one word (default: the retriever)")


#: What ``--retriever`` defaults to in every command that retrieves (said in each one's help): one default,
#: :func:`rirag.retrieval.defaults.default_spec`.
WHY_DEFAULT_RETRIEVER = ("learned fusion where `make models` built its ranker, else the best row of the "
                         "cross-validation that needs no trained model (benchmarks/results/retrieval_cv.json); either "
                         "ranks in the rules linked to its top passages where the corpus has its reference graph "
                         "(rirag data xref); the same for retrieve, ask, answer, submit and serve")


def add_retriever_options(p: argparse.ArgumentParser, default: str | None, why: str | None = None,
                          model_help: str = "dense model name or path (dense retrievers)",
                          list_options: bool = False) -> None:
    """``--retriever`` (``why``: said after the default), ``--model`` and the repeatable ``--option KEY=VALUE``
    (typed when parsed; ``list_options``: every key listed in the help)."""
    p.add_argument("--retriever", default=default, help=f"one of: {', '.join(RETRIEVERS)}"
                   + (f" (default {default}: {why})" if why and default else f" (default: {why})" if why else ""))
    p.add_argument("--model", default=None, help=model_help)
    listed = ("; ".join(f"{k} ({option.help})" for k, option in every_option().items()) if list_options
              else "(rirag retrieve --help lists them)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", type=parse_option,
                   help="retriever option, repeatable, checked when parsed" + (": " if list_options else " ") + listed)


def generator_bound(dest: str) -> Callable[[str], int]:
    """argparse ``type=`` of the generator option ``dest``, bounded as :data:`rirag.generation.job.GENERATOR_LIMITS`
    says (the same bound :func:`rirag.generation.job.generator_limits` checks on a namespace built in code)."""
    _, limit, minimum = GENERATOR_LIMITS[dest]
    return bounded_int(limit, minimum)


def add_max_input_option(p: argparse.ArgumentParser) -> None:
    """``--max-input-bytes``: the size limit of every file the command reads (:func:`rirag.io.input_limit`)."""
    p.add_argument("--max-input-bytes", type=bounded_int("max_input_bytes"), default=MAX_INPUT_BYTES, metavar="N",
                   help=f"refuse an input file larger than N bytes, checked before reading it (default "
                        f"{MAX_INPUT_BYTES:_} = 256 MiB); devices such as /dev/zero are always refused")


def add_overwrite_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="discard the answers already in --out (of another run, or without a manifest) and start "
                        "afresh; without it such answers stop the command before any work")


def add_switches(group: argparse._ActionsContainer, config: type = FocusedConfig) -> None:
    """Add each switch of ``config``'s fields (:func:`rirag.generation.focused.config.switch_fields`) as a flag
    (``store_true``, its ``dest`` the field's name; a switch on by default: ``--flag/--no-flag``, on) to ``group``
    (the command's generator options)."""
    for name, switch in switch_fields(config):
        if switch.default:  # on unless --no-<flag>
            group.add_argument(switch.flag, dest=name, action=argparse.BooleanOptionalAction, default=True,
                               help=f"'{FOCUSED}': {switch.help} (on; {switch.off_flag} turns it off)")
        else:
            group.add_argument(switch.flag, dest=name, action="store_true", help=f"'{FOCUSED}': {switch.help}")


def add_generator_options(p: argparse.ArgumentParser) -> None:
    """The ``generator`` group of ``rirag answer``, ``ask`` and ``submit``."""
    g = p.add_argument_group("generator")
    g.add_argument("--generator", default=DEFAULT_GENERATOR,
                   help="; ".join(f"'{kind.name}': {kind.description}" for kind in ANSWERERS.values())
                   + f"; any other name: {LANGUAGE_MODEL_KIND.description}")
    g.add_argument("--generator-model", default=None,
                   help=f"'{ENDPOINT}': the served model name; '{FOCUSED}', '{EXTRACTIVE}': the obligation "
                        "classifier folder")
    g.add_argument("--strategy", default=ZERO_SHOT, choices=STRATEGIES, help="prompting strategy")
    g.add_argument("--adapter", default=None, help="a peft LoRA adapter folder stacked on the causal LM")
    g.add_argument("--load-in-4bit", action="store_true", help="NF4 quantisation (CUDA only; ignored on CPU)")
    g.add_argument("--max-new-tokens", type=generator_bound("max_new_tokens"), default=MAX_NEW_TOKENS)
    g.add_argument("--batch-size", type=generator_bound("batch_size"), default=BATCH_SIZE,
                   help="answers per generation call (and flush)")
    g.add_argument("--base-url", default=None, help=f"'{ENDPOINT}': e.g. http://localhost:8000/v1")
    g.add_argument("--api-key-env", default=ENDPOINT_API_KEY_ENV, help=f"'{ENDPOINT}': env variable with the key")
    g.add_argument("--concurrency", type=generator_bound("concurrency"), default=ENDPOINT_CONCURRENCY,
                   help=f"'{ENDPOINT}': requests in flight")
    g.add_argument("--max-retries", type=generator_bound("max_retries"), default=ENDPOINT_MAX_RETRIES,
                   help=f"'{ENDPOINT}': retries (with backoff) on connection errors, timeouts, 429 and 5xx")
    g.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: CUDA when present)")
    add_switches(g)  # the focused answerer's switches, one per FocusedConfig field that is one
