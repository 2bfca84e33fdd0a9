"""The benchmarks' command lines are in one style, ``--a-b``; an old ``--a_b`` spelling that a committed result or
doc quotes still works, unlisted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _scripts import REPO, load_script

#: argparse options declared with an underscore, and whether the declaration hides it from --help
UNDERSCORE_OPTION = re.compile(r'add_argument\("--[a-z0-9]+_[a-z0-9_]*"(?P<rest>[^)]*(?:\([^)]*\)[^)]*)*)\)', re.S)
#: changed in another branch, not here. The HfArgumentParser scripts (judge_identity, repass_speed) declare no option
#: by hand: it accepts ``--a-b`` and ``--a_b`` for every field, and their usage lines now quote ``--a-b``.
OTHERS = {"generation.py", "retrieval_cv.py"}


def underscore_options(text: str) -> list[str]:
    """Underscore options that ``--help`` lists (a hidden alias says ``help=argparse.SUPPRESS``)."""
    return [m.group(0) for m in UNDERSCORE_OPTION.finditer(text) if "help=argparse.SUPPRESS" not in m.group("rest")]


@pytest.mark.parametrize("path", sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name not in OTHERS),
                         ids=lambda p: p.name)
def test_benchmark_options_use_dashes(path: Path):
    assert underscore_options(path.read_text(encoding="utf-8")) == []


def test_the_check_does_see_an_underscore_option():
    assert underscore_options('p.add_argument("--memory_depth", type=int, default=f(2))')
    assert not underscore_options('p.add_argument("--question_memory", default=argparse.SUPPRESS, '
                                  'help=argparse.SUPPRESS)')


def test_learned_fusion_cv_takes_the_new_and_the_quoted_spelling(capsys):
    cv = load_script("benchmarks/learned_fusion_cv.py")
    new = cv.parse_args(["--encoders", "a,b", "--question-memory", "true", "--memory-depth", "7"])
    old = cv.parse_args(["--encoders", "a,b", "--question_memory", "true"])  # as results/learned_fusion_cv.*.json
    default = cv.parse_args(["--encoders", "a"])
    assert new.question_memory and new.memory_depth == 7 and old.question_memory and not default.question_memory
    with pytest.raises(SystemExit):
        cv.parse_args(["--help"])
    shown = capsys.readouterr().out
    assert "--question-memory" in shown and "--question_memory" not in shown
