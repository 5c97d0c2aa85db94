#!/usr/bin/env python3
"""Writes the reference fixtures of the metrics tests (tests/fixtures/eval/) from the Python
packages the papers used, on texts drawn from the shared data ($LLM_SHARED/data, default
../shared/data):

  rouge_pairs.jsonl   (target, prediction) pairs with the scores of
                        "g"  Google rouge-score   RougeScorer([rouge1, rouge2, rougeL, rougeLsum]).score(target, prediction)
                        "gs" the same with use_stemmer=True
                        "pl" pltrdy rouge 1.0.1   Rouge().get_scores(prediction, target)[0]
                             (rouge-l twice: it fills both the rougeL and rougeLsum slots),
                             or null with "pl_err" naming the exception the package raised
                      each as 12 numbers: rouge1 p r f, rouge2 p r f, rougeL p r f, rougeLsum p r f
  pltrdy_vectors.json the rouge 1.0.1 package's own outputs on its test vectors
                      ($LLM_SHARED/data/rouge: data.json's hyp/ref pairs, same order, and the mean
                      of FilesRouge(hyp.txt, ref.txt)). The scores stored IN data.json come from an
                      older version of the package (pltrdy/rouge issue #28) and 1.0.1 does not
                      reproduce 21 of their 36 numbers, so the tests use what 1.0.1 computes.
  porter_nltk.tsv     word <TAB> nltk PorterStemmer().stem(word) (NLTK_EXTENSIONS mode)
  em_cases.jsonl      {prediction, answers, em}: Lost-in-the-Middle best_subspan_em (the function
                      below is a copy of lost-in-the-middle's metrics.py + the first-line cut of
                      scripts/evaluate_qa_responses.py)
  bleu_cases.jsonl    {text, self_bleu}: BUZZ's run_bleu_eval.calculate_selfBleu on one text
                      split on '.' (null where NLTK raises: a text without '.')

The packages are needed ONLY to regenerate the fixtures (the C tests read the committed files),
so scripts/setup.sh does not install them:
    pip install rouge-score==0.1.2 rouge==1.0.1 nltk numpy
Made with rouge-score 0.1.2, rouge 1.0.1, nltk 3.10.4, Python 3.11.

Usage: scripts/make_rouge_fixtures.py [--out tests/fixtures/eval] [--porter-all FILE]
  --porter-all FILE also writes every distinct token of the shared texts with its NLTK stem (a
  large list for a one-off check: LLM_PORTER_WORDS=FILE build/tests/test_rouge).
"""
import argparse
import gzip
import json
import os
import random
import re
import string
import sys

import nltk
import numpy as np
import rouge as pltrdy_rouge
from nltk.stem import porter
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer, tokenize

KEYS = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def r(x):
    return float("%.8g" % x)


def google(target, prediction, stem):
    s = rouge_scorer.RougeScorer(KEYS, use_stemmer=stem).score(target, prediction)
    return [r(v) for k in KEYS for v in (s[k].precision, s[k].recall, s[k].fmeasure)]


def pltrdy(target, prediction):
    try:
        s = pltrdy_rouge.Rouge().get_scores(prediction, target)[0]
    except (ValueError, RecursionError) as e:
        return None, type(e).__name__
    out = []
    for k in ["rouge-1", "rouge-2", "rouge-l", "rouge-l"]:
        out += [r(s[k]["p"]), r(s[k]["r"]), r(s[k]["f"])]
    return out, None


def sentences(text, n):
    """The first n sentences of text (split after '. ', '! ', '? ')."""
    parts = re.split(r"(?<=[.!?])\s+", text.strip())
    return " ".join(parts[:n])


def load_data(shared):
    xsum = [json.loads(l) for l in open(os.path.join(shared, "xsum/h2o_xsum_0shot.jsonl"))]
    xs = []
    for row in xsum:
        art = row["article"]
        art = art[len("###\nArticle: "):] if art.startswith("###\nArticle: ") else art
        art = art.split("\n\nSummarize the above article")[0]
        xs.append((art, row["summary_gt"]))
    cnn = [json.loads(l) for l in open(os.path.join(shared, "cnn_dailymail/cnn_dailymail_test_first1000.jsonl"))]
    cs = [(row["article"], row["highlights"]) for row in cnn]
    return xs, cs


EDGE = [
    ("", ""), ("", "a prediction"), ("a target", ""), ("...", "some words."), ("words here.", "..."),
    (" ", "x"), ("x", " \t "), (".", "."), ("a . . b", "a b"),
    ("Café naïve Zürich; İstanbul, 5 K (Kelvin sign) and ΚΑΛΗΜΕΡΑ κόσμε",
     "cafe naive zurich istanbul 5k kelvin 日本語 テキスト"),
    ("Prison Link Cymru had 1,099 referrals in 2015-16.", "1,099 referrals in 2015 - 16 (and 1099)"),
    ("The the THE the cat cat", "the cat the cat the cat"),
    ("running runs ran runner generously dying skies tying lying news innings",
     "run running ran generous die sky tie lie news inning"),
    ("first line\nsecond line\n\nthird line", "second line\nfirst line third"),
    ("one\r\ntwo\r\nthree", "one two\nthree"),
    ("a\u00a0b\u2028c\u3000d e", "a b c d e"),
    ("!!! ??? ,,, ;;;", "--- ***"),
    ("a.b.c.d", "a b c d"),
    ("x y z x y z x y z", "z y x z y x"),
    ("repeated repeated repeated words words", "repeated words repeated words repeated"),
    ("The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."),
    ("police killed the gunman.\nthe gunman was shot.", "the gunman was killed by police.\npolice shot him."),
    ("hyphen-ated state-of-the-art e-mail", "hyphenated state of the art email"),
    ("U.S. officials said $4.5bn (£3bn) on 12/03/2019", "us officials said 4 5bn 3bn on 12 03 2019"),
    ("yyyy syzygy toy ivy oats trees troubles", "yyy syzygies toys ivies oat tree trouble"),
]


def rouge_pairs(xs, cs, rng):
    pairs = []
    n = len(xs)
    for i in range(0, 275):                        # XSum summary vs leads of another article
        j = (i * 7 + 3) % n
        pairs.append(("xsum-other", xs[i][1], sentences(xs[j][0], 1 + (i % 4 == 0))))
    for i in range(300, 410):                      # XSum summary vs leads of its own article
        pairs.append(("xsum-own", xs[i][1], sentences(xs[i][0], 1 + (i % 3 == 0))))
    for i in range(0, 100):                        # CNN/DM highlights vs leads (own / other)
        j = i if i % 2 == 0 else (i * 11 + 5) % len(cs)
        t, p = cs[i][1], sentences(cs[j][0], 1 + i % 2)
        if i % 3 == 0:                             # sentences on lines, for rougeLsum
            t = re.sub(r"\s*\.\s+", ".\n", t)
            p = re.sub(r"(?<=[.!?])\s+", "\n", p)
        pairs.append(("cnndm", t, p))
    for t, p in EDGE:
        pairs.append(("edge", t, p))
    return pairs


def best_subspan_em_litm(prediction, ground_truths):
    """lost-in-the-middle: evaluate_qa_responses.get_metrics_for_example + metrics.py."""
    def normalize_answer(s):
        def remove_articles(text):
            return re.sub(r"\b(a|an|the)\b", " ", text)

        def white_space_fix(text):
            return " ".join(text.split())

        def remove_punc(text):
            exclude = set(string.punctuation)
            return "".join(ch for ch in text if ch not in exclude)

        def lower(text):
            return text.lower()
        return white_space_fix(remove_articles(remove_punc(lower(s))))

    prediction = prediction.split("\n")[0].strip()
    normalized_prediction = normalize_answer(prediction)
    for ground_truth in ground_truths:
        normalized_ground_truth = normalize_answer(ground_truth)
        if normalized_ground_truth.lower() in normalized_prediction.lower():
            return 1.0
    return 0.0


EM_HAND = [
    ("Paris", ["Paris"]), ("paris", ["PARIS"]),                          # lowercase
    ("It is Paris.", ["Paris"]), ("Paris!", ["Paris,"]),                 # punctuation
    ("O'Neill", ["ONeill"]), ("ONeill", ["O'Neill"]), ("O Neill", ["O'Neill"]),
    ("the Beatles", ["Beatles"]), ("Beatles", ["The Beatles"]),          # articles
    ("an apple a day", ["apple day"]), ("theatre", ["the atre"]), ("another", ["other"]),
    ("a", ["the"]), ("", ["an"]), ("anything", ["a"]),                   # answer normalises to ""
    ("New   York\tCity", ["new york city"]), ("  New York  ", ["New York"]),  # whitespace
    ("first line\nParis", ["Paris"]), ("Paris\nnot London", ["London"]),  # newline cut
    ("\nParis", ["Paris"]), ("Paris\nLondon", ["Paris"]),
    ("1901", ["1"]), ("in 1901", ["190"]), ("cathedral", ["the cat"]),  # substring, not tokens
    ("George Washington", ["Washington George"]),
    ("London", ["Paris", "London"]), ("Berlin", ["Paris", "London"]),   # several answers
    ("Rome", []),
    ("U.S.A.", ["USA"]), ("USA", ["U.S.A."]), ("the U.S.", ["us"]),
    ("Wilhelm Conrad Röntgen", ["Röntgen"]), ("Rontgen", ["Röntgen"]),
    ("answer: a_b", ["a b"]), ("a-b", ["ab"]), ("\u00a0Paris\u00a0", ["paris"]),
    ("The answer is (B) 42%", ["42"]), ("it was an honour", ["honour"]),
]


def em_cases(shared, rng):
    cases = [(p, a) for p, a in EM_HAND]
    path = os.path.join(shared, "lost_in_the_middle/nq-open-10_total_documents_gold_at_0.first441.jsonl.gz")
    rows = [json.loads(l) for l in gzip.open(path, "rt")]
    for k, row in enumerate(rows[:200]):
        ans = row["answers"]
        if any(ch != ch.lower() and ord(ch) > 127 for a in ans for ch in a):
            continue                                   # non-ASCII capitals: C folds ASCII only
        a = ans[k % len(ans)]
        v = k % 8
        if v == 0: pred = a
        elif v == 1: pred = "The answer is " + a.upper() + "."
        elif v == 2: pred = "I think it is\n" + a            # answer after the newline: 0
        elif v == 3: pred = a[: max(1, len(a) // 2)]         # truncated: usually 0
        elif v == 4: pred = "the " + a.replace(" ", "  ") + ", of course"
        elif v == 5: pred = rows[(k + 1) % len(rows)]["answers"][0]  # another question's answer
        elif v == 6: pred = "\"" + a + "\"\nmore text"
        else: pred = a.replace(" ", "-")
        cases.append((pred, ans))
    return [{"prediction": p, "answers": a, "em": best_subspan_em_litm(p, a)} for p, a in cases]


def self_bleu_buzz(res):
    """buzz-llm run_bleu_eval.py: res.split('.'), strip, calculate_selfBleu."""
    predicts = [s.strip() for s in res.split(".")]
    weight = tuple((1. / 3 for _ in range(3)))
    result = []
    for i in range(len(predicts)):
        sentence = predicts[i].strip().split()
        others = [predicts[j].strip().split() for j in range(len(predicts)) if j != i]
        result.append(sentence_bleu(others, sentence, weights=weight,
                                    smoothing_function=SmoothingFunction().method1))
    return float(np.mean(result))


def bleu_cases(xs, cs):
    texts = [
        "the cat sat on the mat. the cat sat on the mat. the dog ran.",
        "a b c. a b c. a b c.", "one. two. three.", "no dot here",
        "..", "first sentence. second one", "the cat. . the cat.",
        "A man walks. A man walks his dog. The dog walks a man.",
        "Zürich is big. Zürich\u00a0is big. Café au lait.",
    ]
    for i in range(30):
        texts.append(sentences(cs[i][0], 3 + i % 4))
    for i in range(15):
        texts.append(cs[i][1])
    for i in range(15):
        texts.append(sentences(xs[i][0], 3 + i % 3))
    out = []
    for t in texts:
        try:
            v = r(self_bleu_buzz(t))
        except (ValueError, KeyError):   # one piece, no references: NLTK fails
            v = None
        out.append({"text": t, "self_bleu": v})
    return out


def all_tokens(xs, cs, shared):
    words = set()
    texts = [a for a, _ in xs] + [b for _, b in xs] + [a for a, _ in cs] + [b for _, b in cs]
    wt = os.path.join(shared, "wikitext/wiki.test.raw.reconstructed")
    if os.path.exists(wt):
        texts.append(open(wt, encoding="utf-8").read())
    for t in texts:
        words.update(tokenize.tokenize(t, None))
    return sorted(words)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "eval"))
    ap.add_argument("--porter-all")
    a = ap.parse_args()
    shared = os.path.join(os.environ.get("LLM_SHARED", os.path.join(here, "..", "..", "shared")), "data")
    rng = random.Random(5)
    xs, cs = load_data(shared)
    os.makedirs(a.out, exist_ok=True)

    n_pl = 0
    with open(os.path.join(a.out, "rouge_pairs.jsonl"), "w", encoding="utf-8") as f:
        for kind, t, p in rouge_pairs(xs, cs, rng):
            pl, err = pltrdy(t, p)
            n_pl += pl is not None
            rec = {"kind": kind, "target": t, "prediction": p, "g": google(t, p, False),
                   "gs": google(t, p, True), "pl": pl, "pl_err": err}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    vec_dir = os.path.join(shared, "rouge")
    data = json.load(open(os.path.join(vec_dir, "pltrdy_rouge_tests_data.json")))
    recs = [pltrdy(d["ref"], d["hyp"])[0] for d in data]
    avg = pltrdy_rouge.FilesRouge().get_scores(os.path.join(vec_dir, "pltrdy_rouge_tests_hyp.txt"),
                                               os.path.join(vec_dir, "pltrdy_rouge_tests_ref.txt"), avg=True)
    avg = [r(avg[k][q]) for k in ["rouge-1", "rouge-2", "rouge-l", "rouge-l"] for q in "prf"]
    stored_diff = sum(abs(rec[3 * k + i] - d["scores"][m][q]) > 1e-6 for rec, d in zip(recs, data)
                      for k, m in enumerate(["rouge-1", "rouge-2", "rouge-l"]) for i, q in enumerate("prf"))
    with open(os.path.join(a.out, "pltrdy_vectors.json"), "w") as f:
        json.dump({"records": recs, "files_avg": avg,
                   "note": "rouge 1.0.1 outputs; %d of data.json's stored numbers differ" % stored_diff}, f)
        f.write("\n")

    stemmer = porter.PorterStemmer()
    words = all_tokens(xs, cs, shared)
    if a.porter_all:
        with open(a.porter_all, "w") as f:
            for w in words:
                f.write("%s\t%s\n" % (w, stemmer.stem(w)))
    orig = porter.PorterStemmer(porter.PorterStemmer.ORIGINAL_ALGORITHM)
    special = [w for w in words if stemmer.stem(w) != orig.stem(w)]
    rng.shuffle(special)
    sample = set(special[:800]) | set(rng.sample(words, 3000))
    sample |= {"sky", "skies", "dying", "lying", "tying", "news", "innings", "inning", "outings",
               "outing", "cannings", "canning", "howe", "proceed", "exceed", "succeed", "yyyy",
               "syzygy", "generously", "enjoy", "enjoyment", "ties", "died", "spied", "happy",
               "conformabli", "radicalli", "fulli", "analogi", "controll", "roll", "fizzed",
               "hopping", "filing", "failing", "agreed", "feed", "ponies", "caresses", "ab", "a1b2"}
    with open(os.path.join(a.out, "porter_nltk.tsv"), "w") as f:
        for w in sorted(sample):
            f.write("%s\t%s\n" % (w, stemmer.stem(w)))

    with open(os.path.join(a.out, "em_cases.jsonl"), "w", encoding="utf-8") as f:
        for c in em_cases(shared, rng):
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    with open(os.path.join(a.out, "bleu_cases.jsonl"), "w", encoding="utf-8") as f:
        for c in bleu_cases(xs, cs):
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print("wrote %s: rouge pairs (%d with pltrdy scores), %d porter words (of %d), em, bleu"
          % (a.out, n_pl, len(sample), len(words)), file=sys.stderr)


if __name__ == "__main__":
    main()
