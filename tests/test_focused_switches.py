"""The focused answerer's switches come from FocusedConfig's field metadata: a field carrying a Switch is a flag of
the command, an entry of the generator spec and of the run manifest (only when on), and an option of the answerer."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import pytest

from rirag.cli.answers import generator_manifest
from rirag.cli.options import add_generator_options, add_switches
from rirag.generation.focused.config import SWITCH, SWITCHES, FocusedConfig, Switch, command_defaults, switches_on
from rirag.generation.registry import generator_spec


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_generator_options(p)
    return p.parse_args(list(argv))


#: Every switch that is on by default, turned off.
OFF = ("--no-follow-references", "--no-cite-referring", "--no-footnotes", "--no-linked-only", "--no-whole-rules",
       "--no-connect")


def test_the_switches_are_the_fields_that_carry_one():
    assert SWITCHES == ("say_missing", "cite_referring", "footnotes", "whole_rules", "linked_only", "answer_parts",
                        "connect", "follow_references", "passage_set", "focus_lists")
    p = argparse.ArgumentParser()
    add_generator_options(p)
    by_dest = {a.dest: a for a in p._actions}
    assert by_dest["follow_references"].option_strings == ["--follow-references", "--no-follow-references"]
    assert by_dest["follow_references"].default is True  # on by default in the commands
    assert by_dest["whole_rules"].default is True and by_dest["cite_referring"].default is True
    assert by_dest["whole_rules"].option_strings == ["--whole-rules", "--no-whole-rules"]
    assert by_dest["focus_lists"].option_strings == ["--focus-lists"]
    assert by_dest["passage_set"].option_strings == ["--passage-set"]
    assert by_dest["say_missing"].option_strings == ["--say-missing"] and by_dest["say_missing"].default is False
    assert by_dest["focus_lists"].help.startswith("'focused': quote a long list")


def test_the_spec_and_the_manifest_carry_a_switch_only_when_it_is_on():
    off = parse(*OFF)
    assert generator_spec("focused", None, off).options == {"device": None}
    assert not set(SWITCHES) & set(generator_manifest(off)["generator_options"])
    on = parse(*OFF, "--focus-lists")
    assert generator_spec("focused", None, on).options == {"device": None, "focus_lists": True}
    assert generator_manifest(on)["generator_options"]["focus_lists"] is True
    assert "follow_references" not in generator_manifest(on)["generator_options"]
    # the command's default follows references, cites referring rules and quotes rules whole: spec and manifest say so
    default = parse()
    assert generator_spec("focused", None, default).options == {
        "device": None, "cite_referring": True, "footnotes": True, "linked_only": True, "whole_rules": True,
        "connect": True, "follow_references": True}
    assert generator_manifest(default)["generator_options"]["follow_references"] is True
    # another kind never takes them
    assert generator_spec("extractive", None, parse("--focus-lists", "--follow-references")).options == {"device": None}


def test_a_switch_on_by_default_is_on_in_the_command_and_off_in_a_spec_without_it():
    @dataclass
    class WithDefaultOn(FocusedConfig):
        quote_titles: bool = field(default=False, metadata={
            SWITCH: Switch("--quote-titles", "keep in-line titles", default=True)})

    p = argparse.ArgumentParser()
    add_switches(p, WithDefaultOn)
    assert p.parse_args([]).quote_titles is True
    assert p.parse_args(["--no-quote-titles"]).quote_titles is False
    assert switches_on(p.parse_args([]), WithDefaultOn)["quote_titles"] is True
    assert "quote_titles" not in switches_on(p.parse_args(["--no-quote-titles"]), WithDefaultOn)
    assert command_defaults(WithDefaultOn)["quote_titles"] is True
    # the field keeps off: a spec or manifest written without the switch (before it existed, or off) means off
    assert WithDefaultOn().quote_titles is False and FocusedConfig().follow_references is False
    assert command_defaults() == {"say_missing": False, "cite_referring": True, "footnotes": True, "linked_only": True,
                                  "whole_rules": True, "answer_parts": False, "connect": True,
                                  "follow_references": True, "passage_set": False, "focus_lists": False}


def test_adding_a_switch_is_one_field():
    @dataclass
    class WithAnother(FocusedConfig):
        quote_titles: bool = field(default=False, metadata={
            "help": "Keep in-line titles.", SWITCH: Switch("--quote-titles", "keep in-line titles")})
        unrecorded: bool = field(default=False, metadata={SWITCH: Switch("--unrecorded", "x", recorded=False)})

    p = argparse.ArgumentParser()
    add_switches(p, WithAnother)
    args = p.parse_args(["--quote-titles", "--unrecorded"])
    assert args.quote_titles is True
    # the unrecorded switch stays out of the spec; follow_references is on by default
    assert switches_on(args, WithAnother) == {"cite_referring": True, "footnotes": True, "linked_only": True,
                                              "whole_rules": True, "connect": True, "follow_references": True,
                                              "quote_titles": True}
    assert switches_on(p.parse_args([*OFF]), WithAnother) == {}


def test_the_answerer_takes_each_switch_and_refuses_other_names():
    from rirag.generation.focused import FocusedAnswerer

    assert FocusedAnswerer(focus_lists=True).config.focus_lists is True
    assert FocusedAnswerer(config=FocusedConfig(follow_references=True), follow_references=None).config \
        .follow_references is True  # None: the config's
    with pytest.raises(TypeError, match="unknown option.*focus_list"):
        FocusedAnswerer(focus_list=True)
