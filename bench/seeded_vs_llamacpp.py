#!/usr/bin/env python3
"""How long a seeded, sampled llm-run text stays llama.cpp's on the same GGUF file.

llm-run's sampler chain and its draws are llama.cpp's (model/sampler.c, model/sampler_rng.c;
tests/test_sampler.c checks both on fixed logits), so two runs with the same seed and settings
pick the same token whenever the two engines' logits leave the same candidates in the same order.
This script measures that end to end: for each model file, prompt and seed, llama.cpp's own
generation (scripts/llamacpp_seeded.cpp: libllama's forward pass and common_sampler, as
llama-cli runs them) and llm-run's (`--prompt-ids ... -s SEED --ignore-eos`), both with
llama.cpp's default chain (--temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05), and the first step
where the tokens differ. At that step it compares llama.cpp's candidate list (ids, in the order
its draw went through them) with the one llm-run's chain makes of llm-run's own logits
(--logits-out; the same stages in numpy): "candidates differ" means the engines' logits (not the
draws) parted them; with the same candidates, the draw's uniform (recomputed from the seed) is
compared with llm-run's cumulative probabilities: a small distance to a boundary means the
two engines' probabilities put that u on different tokens; a large one would be a draw that is
not llama.cpp's.

    bench/seeded_vs_llamacpp.py [--seeds 10] [--n 64] [--models smollm2,smollm2-f32,qwen] [--out FILE]

Needs bench/llamacpp.sh's build (never in CI), numpy, and for *-f32 bench/gguf_f32.py's copies
(the `gguf` package). Not a speed measurement: the host's noise does not enter.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("LLM_RUN_MODELS", os.path.expanduser("~/.cache/llm-run"))
SETTINGS = dict(temp=0.8, top_k=40, top_p=0.95, min_p=0.05)   # llama-cli's defaults
PROMPTS = [("story", ["-p", "Once upon a time, in a small village by the sea,"]),
           ("chat", ["--chat", "-p", "Give me three ideas for a short weekend trip."])]


def sh(cmd, **kw):
    return subprocess.check_output(cmd, text=True, **kw)


def build_tool():
    binpath = sh([os.path.join(REPO, "bench/llamacpp.sh")]).strip()
    d = os.path.dirname(os.path.dirname(binpath))   # $CACHE/llamacpp-VERSION
    b = os.path.join(d, "build")
    exe = os.path.join(tempfile.mkdtemp(), "llamacpp_seeded")
    libs = ["common/libllama-common.a", "common/libllama-common-base.a", "src/libllama.a", "ggml/src/libggml.a",
            "ggml/src/libggml-cpu.a", "ggml/src/libggml-base.a"]
    subprocess.check_call(["g++", "-O1", "-std=c++17", "-I" + os.path.join(d, "src/include"),
                           "-I" + os.path.join(d, "src/common"), "-I" + os.path.join(d, "src/ggml/include"),
                           os.path.join(REPO, "scripts/llamacpp_seeded.cpp")] + [os.path.join(b, x) for x in libs] +
                          ["-lpthread", "-fopenmp", "-o", exe])
    return exe


def model_files(names):
    fetch = lambda n: sh([os.path.join(REPO, "scripts/fetch_model.sh"), n]).strip()
    out = []
    for n in names:
        base = {"smollm2": ("SmolLM2-135M Q4_1", "smollm2-135m"), "qwen": ("Qwen2.5-0.5B", "qwen2.5-0.5b")}[n.replace("-f32", "")]
        q = fetch(base[1])
        if n.endswith("-f32"):
            f32 = os.path.join(CACHE, os.path.basename(q).replace(".gguf", "") + ".F32.gguf")
            if not os.path.exists(f32):
                subprocess.check_call([sys.executable, os.path.join(REPO, "bench/gguf_f32.py"), q, f32 + ".part"])
                os.rename(f32 + ".part", f32)
            out.append((base[0].split(" ")[0] + " F32 copy", f32))
        else:
            out.append((base[0], q))
    return out


class MT19937:
    """std::mt19937 (C++11 [rand.predef]); u() is libstdc++'s uniform_real_distribution<double>."""

    def __init__(self, seed):
        self.mt = [seed & 0xFFFFFFFF] + [0] * 623
        for i in range(1, 624):
            self.mt[i] = (1812433253 * (self.mt[i - 1] ^ (self.mt[i - 1] >> 30)) + i) & 0xFFFFFFFF
        self.i = 624

    def next(self):
        if self.i >= 624:
            for k in range(624):
                y = (self.mt[k] & 0x80000000) | (self.mt[(k + 1) % 624] & 0x7FFFFFFF)
                self.mt[k] = self.mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return (y ^ (y >> 18)) & 0xFFFFFFFF

    def u(self):
        a = float(self.next())
        return (a + float(self.next()) * 4294967296.0) / 18446744073709551616.0


def our_cum(row, ids):
    """The draw's cumulative probabilities over the candidates ids (after the temperature)."""
    lg = row.astype(np.float32)[ids] / np.float32(SETTINGS["temp"])
    e = np.exp((lg - lg.max()).astype(np.float64))
    return np.cumsum(e) / e.sum()


def our_candidates(row):
    """llm-run's chain (top-k 40, top-p 0.95, min-p 0.05, temperature) on one logit row, as numpy."""
    row = row.astype(np.float32)
    o = np.argsort(-row, kind="stable")[:SETTINGS["top_k"]]
    lg = row[o]
    p = np.exp(lg - lg[0]).astype(np.float32)
    c = np.cumsum(p / p.sum(dtype=np.float32), dtype=np.float32)
    last = int(np.argmax(c >= SETTINGS["top_p"])) + 1 if (c >= SETTINGS["top_p"]).any() else len(o)
    o, lg = o[:last], lg[:last]
    return [int(x) for x in o[lg >= lg[0] + np.log(np.float32(SETTINGS["min_p"]))]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--models", default="smollm2,smollm2-f32,qwen")
    ap.add_argument("--out", default=os.path.join(REPO, "bench/seeded_llamacpp.md"))
    a = ap.parse_args()
    llm = os.path.join(REPO, "llm-run")
    if not os.access(llm, os.X_OK):
        sys.exit("llm-run not built (make llm-run)")
    exe = build_tool()
    commit = sh([os.path.join(REPO, "bench/llamacpp.sh"), "--commit"]).strip()
    t0 = time.time()
    rows = []
    repro = [0, 0]   # llama.cpp's picks reproduced from the seed, of all its steps
    tmp = tempfile.mkdtemp()
    for label, path in model_files(a.models.split(",")):
        for pname, pargs in PROMPTS:
            ids = json.loads(sh([llm, "tokenize", "-m", path, "--ids"] + pargs, stderr=subprocess.DEVNULL))
            idstr = ",".join(map(str, ids))
            equal, near, cls = [], [], {"full": 0, "candidates differ": 0, "same candidates": 0}
            for seed in range(1, a.seeds + 1):
                r = subprocess.run([exe, path, str(seed), str(a.n), str(SETTINGS["temp"]), str(SETTINGS["top_k"]),
                                    str(SETTINGS["top_p"]), str(SETTINGS["min_p"]), idstr], text=True, capture_output=True,
                                   env=dict(os.environ, LLAMACPP_CANDIDATES="1"), check=True)
                theirs = [int(x) for x in r.stdout.strip().split(",")]
                cand, probs, sel = {}, {}, {}
                for line in r.stderr.splitlines():
                    if line.startswith("step "):
                        f = line.split()
                        at = f.index("p")
                        cand[int(f[1])] = [int(x) for x in f[5:at]]
                        probs[int(f[1])] = np.array([float(x) for x in f[at + 1:]])
                        sel[int(f[1])] = int(f[3])
                # llama.cpp's own picks, every step, from the seed alone: the first candidate
                # whose cumulative p reaches u (a tie within 1e-6 of u counts either way)
                g = MT19937(seed)
                us = [g.u() for _ in range(a.n)]
                for i in range(a.n):
                    cum = np.cumsum(probs[i])
                    k_u = int(np.argmax(cum >= us[i])) if (cum >= us[i]).any() else len(cum) - 1
                    agree = k_u == sel[i] or abs(cum[min(k_u, sel[i])] - us[i]) < 1e-6
                    repro[0] += agree
                    repro[1] += 1
                npy = os.path.join(tmp, "l.npy")
                j = json.loads(sh([llm, "-m", path, "--prompt-ids", idstr, "-n", str(a.n), "--ignore-eos", "-s", str(seed),
                                   "--temp", str(SETTINGS["temp"]), "--top-k", str(SETTINGS["top_k"]), "--top-p",
                                   str(SETTINGS["top_p"]), "--min-p", str(SETTINGS["min_p"]), "--logits-out", npy, "--json"],
                                  stderr=subprocess.DEVNULL))
                ours = j["tokens"]
                k = next((i for i, (x, y) in enumerate(zip(theirs, ours)) if x != y), min(len(theirs), len(ours)))
                equal.append(k)
                if k >= a.n:
                    cls["full"] += 1
                    continue
                row = np.load(npy)[len(ids) - 1 + k]
                mine = our_candidates(row)
                if mine != cand.get(k):
                    cls["candidates differ"] += 1
                    print("%s %s seed %d: equal for %d of %d; at step %d llama.cpp's candidates %s ours %s" %
                          (label, pname, seed, k, a.n, k, cand.get(k, [])[:8], mine[:8]), file=sys.stderr)
                    continue
                # the same list: the draw's u (one per step, as llama.cpp's dist) against our boundaries
                u = us[k]
                cum = our_cum(row, mine)
                gap = float(np.min(np.abs(cum - u)))
                cls["same candidates"] += 1
                near.append(gap)
                print("%s %s seed %d: equal for %d of %d; same candidates, u %.6f is %.2e from a boundary of our p" %
                      (label, pname, seed, k, a.n, u, gap), file=sys.stderr)
            rows.append((label, pname, len(ids), equal, cls, near))
            print(label, pname, equal, cls, file=sys.stderr)
    with open(a.out, "w") as f:
        f.write("# Seeded sampling, llm-run against llama.cpp on the same files\n\n")
        f.write("Written by `bench/seeded_vs_llamacpp.py --seeds %d --n %d --models %s` on %s in %.0f s.\n\n" %
                (a.seeds, a.n, a.models, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - t0))
        f.write("- llama.cpp: %s; its generation: scripts/llamacpp_seeded.cpp (libllama + common_sampler).\n" % commit)
        f.write("- Settings: llama-cli's default chain, `--temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05`, seeds 1..%d, "
                "%d tokens after the prompt (`--ignore-eos`).\n" % (a.seeds, a.n))
        f.write("- \"Tokens equal\": generated tokens before the first that differs. At that step, \"candidates differ\": "
                "llama.cpp's candidate list (ids in draw order) is not the one llm-run's chain makes of its own logits, so "
                "the engines' logits parted the texts; \"same candidates\": the same list, so the draw's uniform u "
                "(recomputed here from the seed) fell where the two engines' probabilities put different tokens: its "
                "distance to the nearest boundary of llm-run's cumulative probabilities says by how little.\n\n")
        f.write("llama.cpp's own picks recomputed from the seed alone (std::mt19937 and libstdc++'s uniform double, "
                "as model/sampler_rng.c, over llama.cpp's candidate probabilities at every step): **%d of %d steps**.\n\n"
                % (repro[0], repro[1]))
        f.write("| model file | prompt (ids) | tokens equal per seed | all %d equal | candidates differ | same candidates |\n" % a.n)
        f.write("|---|---|---|---|---|---|\n")
        for label, pname, n_ids, equal, cls, near in rows:
            same = "%d" % cls["same candidates"]
            if near:
                same += " (u within %s of a boundary)" % ", ".join("%.0e" % x for x in near)
            f.write("| %s | %s (%d) | %s | %d of %d | %d | %s |\n" % (label, pname, n_ids, " ".join(map(str, equal)),
                                                                   cls["full"], len(equal), cls["candidates differ"], same))
    print("wrote", a.out)


if __name__ == "__main__":
    main()
