"""A faithful re-implementation of the reference RePASs evaluation loop (RegNLP/RePASs shared-task code).

It keeps the reference's loop structure on purpose (one NLI call per passage sentence and batch of 16 answer
sentences, one obligation-classifier call per passage text and per answer, one ``pipeline`` call per coverage
pair with an early ``break``), so that it serves as the slow baseline of ``benchmarks/repass_speed.py`` and as
the oracle our fast scorer is tested against. Differences from the reference, all neutral for the official models:
label indices come from ``config.id2label`` (the reference hard-codes entailment = 1, contradiction = 0, obligation
= 1, which is what those models' configs say) and models are passed in rather than loaded at import time.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rirag.scoring import core
from rirag.scoring.constants import (
    CONTRADICTION,
    COVERAGE_JOIN,
    COVERAGE_THRESHOLD,
    ENTAILMENT,
    PASSAGE_JOIN,
    REFERENCE_NLI_BATCH_SIZE,
)
from rirag.scoring.models import label_index, load_classifier, obligation_index
from rirag.text.sentences import get_splitter


class ReferenceRePASs:
    """Slow, reference-structured RePASs (mode ``reference``)."""

    def __init__(self, nli_model: str, coverage_model: str, obligation_model: str, device: str = "cpu",
                 sentence_splitter: Any = "punkt"):
        import torch
        from transformers import pipeline

        self.torch = torch
        self.device = device
        self.nli_tokenizer, self.nli_model = load_classifier(nli_model, device)
        self.obligation_tokenizer, self.obligation_model = load_classifier(obligation_model, device)
        cov_tokenizer, cov_model = load_classifier(coverage_model, device)
        self.coverage_nli_model = pipeline("text-classification", model=cov_model, tokenizer=cov_tokenizer,
                                           device=torch.device(device))
        self.e_idx = label_index(self.nli_model.config, ENTAILMENT)
        self.c_idx = label_index(self.nli_model.config, CONTRADICTION)
        self.ob_idx = obligation_index(self.obligation_model.config)
        self.sent_tokenize = functools.cache(lambda text: list(get_splitter(sentence_splitter)(text)))

    def get_nli_probabilities(self, premises, hypotheses):
        features = self.nli_tokenizer(premises, hypotheses, padding=True, truncation=True,
                                      return_tensors="pt").to(self.device)
        with self.torch.no_grad():
            logits = self.nli_model(**features).logits.cpu().numpy()
        return core.softmax(logits)

    def get_nli_matrix(self, passages, answers):
        entailment_matrix = np.zeros((len(passages), len(answers)))
        contradiction_matrix = np.zeros((len(passages), len(answers)))
        batch_size = REFERENCE_NLI_BATCH_SIZE
        for i, pas in enumerate(passages):
            for b in range(0, len(answers), batch_size):
                e = b + batch_size
                probs = self.get_nli_probabilities([pas] * len(answers[b:e]), answers[b:e])
                entailment_matrix[i, b:e] = probs[:, self.e_idx]
                contradiction_matrix[i, b:e] = probs[:, self.c_idx]
        return entailment_matrix, contradiction_matrix

    def classify_obligations(self, sentences):
        if not sentences:
            return np.zeros(0, dtype=int)
        inputs = self.obligation_tokenizer(sentences, padding=True, truncation=True,
                                           return_tensors="pt").to(self.device)
        with self.torch.no_grad():
            logits = self.obligation_model(**inputs).logits
        return self.torch.argmax(logits, dim=1).cpu().numpy()

    def calculate_obligation_coverage_score(self, passages, answers):
        obligation_sentences_source = []
        for passage in passages:
            sentences = self.sent_tokenize(passage)
            labels = self.classify_obligations(sentences)
            obligation_sentences_source.extend([s for s, lab in zip(sentences, labels) if lab == self.ob_idx])
        obligation_sentences_answer = []
        for answer in answers:
            sentences = self.sent_tokenize(answer)
            labels = self.classify_obligations(sentences)
            obligation_sentences_answer.extend([s for s, lab in zip(sentences, labels) if lab == self.ob_idx])
        covered_count = 0
        for obligation in obligation_sentences_source:
            for answer_sentence in obligation_sentences_answer:
                nli_result = self.coverage_nli_model(f"{answer_sentence}{COVERAGE_JOIN}{obligation}")
                if nli_result[0]["label"].lower() == ENTAILMENT and nli_result[0]["score"] > COVERAGE_THRESHOLD:
                    covered_count += 1
                    break
        return covered_count / len(obligation_sentences_source) if obligation_sentences_source else 0

    def calculate_final_composite_score(self, passages, answers):
        passage_sentences = [s for p in passages for s in self.sent_tokenize(p)]
        answer_sentences = [s for a in answers for s in self.sent_tokenize(a)]
        entailment_matrix, contradiction_matrix = self.get_nli_matrix(passage_sentences, answer_sentences)
        entailment_score = core.reduce_nli_matrix(entailment_matrix)
        contradiction_score = core.reduce_nli_matrix(contradiction_matrix)
        obligation_coverage_score = self.calculate_obligation_coverage_score(passages, answers)
        composite = core.composite_score(obligation_coverage_score, entailment_score, contradiction_score)
        return composite, entailment_score, contradiction_score, obligation_coverage_score

    def score_item(self, answer: str, passages: Any) -> dict[str, float] | None:
        """One answer as the reference's main loop handles it (``None`` = skipped empty answer)."""
        if not answer or not answer.strip():
            return None
        if isinstance(passages, list):
            passages = PASSAGE_JOIN.join(passages)
        composite, e, c, oc = self.calculate_final_composite_score([passages], [answer])
        return {"entailment": e, "contradiction": c, "obligation_coverage": oc, "repass": composite}
