"""A tiny RAFT dataset as the builder saves it (:func:`rirag.hub.dataset_build.save_raft_dataset`): 12 instances over 8
one-sentence passages, 8 with their oracle passage, answered by a composer that cites every passage shown. Shared by
the RAFT trainer tests (one process, two processes, the Hub round trip)."""

from __future__ import annotations

from pathlib import Path


class CiteEveryPassage:
    """A stand-in extractive composer: each passage once, a part citing itself, in order."""

    name, needs_passages = "cite every passage", True

    def draft(self, requests):
        from rirag.generation.base import Draft, DraftPart

        return [Draft([DraftPart(p, (i,), i) for i, p in enumerate(r.passages)]) for r in requests]

    def describe(self):
        return None


def save_tiny_raft_dataset(out: str | Path) -> None:
    from rirag.data.obliqa import Passage
    from rirag.generation.raft import ExtractiveTeacher, RaftInstance, raft_rows, split_rows
    from rirag.hub.dataset_build import save_raft_dataset

    corpus = {f"p{i}": Passage(f"p{i}", 1, str(i), f"A firm must file a return {i}.") for i in range(8)}
    instances = [RaftInstance(f"q{j}", "Must a firm file a return?", tuple(f"p{(j + k) % 8}" for k in range(4)),
                              (f"p{j % 8}",) if j % 3 else ()) for j in range(12)]
    rows, _ = raft_rows(instances, corpus, ExtractiveTeacher(CiteEveryPassage()))
    report = {"questions": 12, "instances": 12, "with_oracle": 8, "oracle_share": 0.6667, "oracle_probability": 0.7,
              "distractors_with_oracle": 3, "distractors_without_oracle": 4, "seed": 42, "skipped": {},
              "split": "train", "split_seed": 42, "distractor_source": "hand-made", "negatives_depth": 20,
              "teacher": "extractive", "teacher_dropped": 0}
    save_raft_dataset(split_rows(rows, 0.2), report, str(out), "pytest")
