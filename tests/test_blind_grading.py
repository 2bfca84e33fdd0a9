"""The blind grading protocol (issue 64): a packet that hides whose answer is whose, a key apart, grades read back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import blind_grading  # noqa: E402


def test_a_packet_hides_the_systems_and_the_grades_come_back_by_system(tmp_path):
    questions = [{"QuestionID": f"q{i}", "Question": f"Question {i}?", "GoldAnswer": "Ref.",
                  "Gold": [{"role": "src", "text": f"Rule {i} text."}, {"role": "tgt", "text": "Other rule."}]}
                 for i in range(3)]
    (tmp_path / "q.json").write_text(json.dumps(questions))
    mine = [{"QuestionID": f"q{i}", "Answer": f"Mine quotes rule {i} [3]. And more [7]."} for i in range(3)]
    (tmp_path / "mine.json").write_text(json.dumps(mine))
    theirs = [{"QuestionID": f"q{i}", "Answer": "Theirs [#ID:ab12]."} for i in range(3)]
    (tmp_path / "theirs.json").write_text(json.dumps(theirs))
    out = tmp_path / "packet"
    cfg = blind_grading.Config("packet", str(tmp_path / "q.json"),
                               (f"mine={tmp_path / 'mine.json'}", f"theirs={tmp_path / 'theirs.json'}", "gold-quote"),
                               sample=2, seed=1, out=str(out))
    blind_grading.packet(cfg)
    text = (out / "packet.md").read_text()
    assert "gold-quote" not in text and "theirs" not in text  # no system named (their answers say "Theirs")
    assert "[7]" not in text and "[#ID:ab12]" not in text and "[2]" in text  # markers renumbered 1, 2, ...
    key = json.loads((out / "key.json").read_text())
    assert len(key["items"]) == 2 and all(sorted(v["labels"].values()) == ["gold-quote", "mine", "theirs"]
                                          for v in key["items"].values())
    grades = json.loads((out / "grades_template.json").read_text())
    for item, spec in key["items"].items():
        by_system = {s: label for label, s in spec["labels"].items()}
        for label, system in spec["labels"].items():
            grades[item][label] = {s: (5 if system == "mine" else 3) for s in blind_grading.SCALES}
        grades[item]["rank"] = f"{by_system['mine']} > {by_system['theirs']}={by_system['gold-quote']}"
    (tmp_path / "g.json").write_text(json.dumps(grades))
    result = blind_grading.read(blind_grading.Config("read", key=str(out / "key.json"),
                                                     grades=(str(tmp_path / "g.json"),)))
    assert result["mean"]["mine"]["useful"] == 5.0 and result["mean"]["theirs"]["correct"] == 3.0
    assert result["ranked_first"]["mine"] == {"alone": 2, "tied": 0}


def test_a_round_on_unseen_questions_leaves_out_the_earlier_rounds_questions(tmp_path):
    questions = [{"QuestionID": f"q{i}", "Question": f"Question {i}?", "GoldAnswer": "Ref.",
                  "Gold": [{"role": "src", "text": f"Rule {i} text."}]} for i in range(5)]
    (tmp_path / "q.json").write_text(json.dumps(questions))
    first = blind_grading.Config("packet", str(tmp_path / "q.json"), ("gold-quote",), sample=3, seed=1,
                                 out=str(tmp_path / "r1"))
    blind_grading.packet(first)
    earlier = {v["QuestionID"] for v in json.loads((tmp_path / "r1" / "key.json").read_text())["items"].values()}
    second = blind_grading.Config("packet", str(tmp_path / "q.json"), ("gold-quote",), sample=3, seed=1,
                                  exclude=(str(tmp_path / "r1" / "key.json"),), out=str(tmp_path / "r2"))
    blind_grading.packet(second)
    later = {v["QuestionID"] for v in json.loads((tmp_path / "r2" / "key.json").read_text())["items"].values()}
    assert len(earlier) == 3 and later == {f"q{i}" for i in range(5)} - earlier  # only the two left
