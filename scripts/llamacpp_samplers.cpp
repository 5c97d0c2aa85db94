// llamacpp_samplers.cpp — writes tests/fixtures/sampler/llamacpp.txt: what llama.cpp's own
// samplers (llama_sampler_init_top_k, _typical, _top_p, _min_p, _xtc, _temp_ext,
// _top_n_sigma, _mirostat, _mirostat_v2, chained as common/sampling.cpp chains them) leave of
// fixed logit rows, the reference for model/sampler.c (tests/test_sampler.c). Built and run by
// scripts/make_sampler_fixtures.sh against the llama.cpp that bench/llamacpp.sh builds.
//
// Output, one block per case:
//   case NAME
//   params temp=T dyn_range=R dyn_exp=E top_k=K top_p=P min_p=M typ_p=Y top_n_sigma=S
//          xtc_p=XP xtc_t=XT min_keep=N mirostat=0|1|2 tau=TAU eta=ETA order=CHARS (one line)
//   row VOCAB SPREAD STATE SUM   (the logits: make_row(VOCAB, SPREAD) from the generator state
//                                 STATE, which tests/test_sampler.c repeats; SUM, their sum in
//                                 double, checks that it did)
//   keep N id p id p ...         (the candidates left, by id, with their probabilities: softmax
//                                 over what is left, -inf dropped; mirostat: llama.cpp's own p)
//   pick ID                      (mirostat only: the token llama.cpp drew; the next row's
//                                 truncation depends on it through mu)
//   end
// Draw cases (run_draws) have no keep lines: one chain, seeded, across all the rows, ending in
// llama.cpp's dist (or Mirostat, or adaptive-p), each pick accepted before the next row:
//   seed S
//   penalties repeat=R freq=F present=P last_n=N   (when the order has e)
//   row ...
//   draw ID                      (the token the chain drew from that row)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include "llama.h"
#include "llama-sampler.h"   // llama_sampler_init_dry_testing: DRY with token-sequence breakers

struct params {
    float temp = 0.8f, dyn_range = 0.0f, dyn_exp = 1.0f, top_p = 1.0f, min_p = 0.0f, typ_p = 1.0f;
    float top_n_sigma = -1.0f, xtc_p = 0.0f, xtc_t = 0.1f, tau = 5.0f, eta = 0.1f;
    int top_k = 0, min_keep = 0, mirostat = 0;
    float ad_target = -1.0f, ad_decay = 0.9f;   // adaptive-p ('a' in order)
    float dry_mult = 0.0f, dry_base = 1.75f;
    float pen_repeat = 1.0f, pen_freq = 0.0f, pen_present = 0.0f;   // penalties ('e' in order)
    int pen_last_n = 64;
    uint32_t seed = 42;   // every random sampler's
    int dry_allowed = 2, dry_last_n = 64;
    std::vector<std::vector<llama_token>> breakers;   // DRY's, as token sequences
    std::vector<llama_token> history;                  // accepted before the first row
    std::string order = "skypmxt";   // llama.cpp's default chain without penalties and dry
};

static uint64_t rng_state = 12345;
static double uniform()
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

// A logit row like a model's: a few strong tokens over a long Gaussian-ish tail. The float
// operations are spelled out one at a time (no contraction) so that C repeats them exactly.
static std::vector<float> make_row(int vocab, float spread)
{
    std::vector<float> r(vocab);
    for (int i = 0; i < vocab; i++) {
        double g = 0.0;
        for (int k = 0; k < 4; k++) {
            volatile double u = uniform() - 0.5;
            g += u;
        }
        volatile double gs = g * spread;
        r[i] = (float)gs;
    }
    int strong = 1 + (int)(uniform() * 5);
    for (int s = 0; s < strong; s++) {
        int at = (int)(uniform() * vocab);
        volatile double four_u = 4.0 * uniform();
        r[at] += (float)(2.0 + four_u);
    }
    return r;
}

static llama_sampler *make_chain(const params &p, int vocab)
{
    llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
    if (p.mirostat) {
        llama_sampler_chain_add(c, llama_sampler_init_temp(p.temp));
        if (p.mirostat == 1)
            llama_sampler_chain_add(c, llama_sampler_init_mirostat(vocab, p.seed, p.tau, p.eta, 100));
        else
            llama_sampler_chain_add(c, llama_sampler_init_mirostat_v2(p.seed, p.tau, p.eta));
        return c;
    }
    for (char ch : p.order) switch (ch) {
        case 'a': break;   // adaptive-p goes last, in place of dist (common/sampling.cpp)
        case 'e':
            llama_sampler_chain_add(c, llama_sampler_init_penalties(vocab, p.pen_last_n, p.pen_repeat, p.pen_freq, p.pen_present));
            break;
        case 'k': llama_sampler_chain_add(c, llama_sampler_init_top_k(p.top_k)); break;
        case 'y': llama_sampler_chain_add(c, llama_sampler_init_typical(p.typ_p, p.min_keep)); break;
        case 'p': llama_sampler_chain_add(c, llama_sampler_init_top_p(p.top_p, p.min_keep)); break;
        case 's': llama_sampler_chain_add(c, llama_sampler_init_top_n_sigma(p.top_n_sigma)); break;
        case 'm': llama_sampler_chain_add(c, llama_sampler_init_min_p(p.min_p, p.min_keep)); break;
        case 'x': llama_sampler_chain_add(c, llama_sampler_init_xtc(p.xtc_p, p.xtc_t, p.min_keep, p.seed)); break;
        case 't': llama_sampler_chain_add(c, llama_sampler_init_temp_ext(p.temp, p.dyn_range, p.dyn_exp)); break;
        case 'd':   // multiplier 0: DRY is off (llama.cpp's returns at once; _testing has no empty form)
            if (p.dry_mult != 0.0f) llama_sampler_chain_add(c, llama_sampler_init_dry_testing(p.dry_mult, p.dry_base, p.dry_allowed, p.dry_last_n, p.breakers));
            break;
        default: fprintf(stderr, "unknown stage %c\n", ch); exit(1);
    }
    if (p.order.find('a') != std::string::npos) llama_sampler_chain_add(c, llama_sampler_init_adaptive_p(p.ad_target, p.ad_decay, p.seed));
    return c;
}

// The next logit row (make_row from the generator's state), its "row" line printed, as the
// candidate list llama-cli builds: every id in order, p unset, unsorted.
static std::vector<llama_token_data> next_row(int vocab, float spread)
{
    const uint64_t state = rng_state;
    std::vector<float> row = make_row(vocab, spread);
    double sum_row = 0.0;
    for (float x : row) sum_row += x;
    printf("row %d %.9g %llu %.17g\n", vocab, spread, (unsigned long long)state, sum_row);
    std::vector<llama_token_data> data(vocab);
    for (int i = 0; i < vocab; i++) data[i] = {i, row[i], 0.0f};
    return data;
}

static void print_params(const char *name, const params &p)
{
    printf("case %s\n", name);
    printf("params temp=%.9g dyn_range=%.9g dyn_exp=%.9g top_k=%d top_p=%.9g min_p=%.9g typ_p=%.9g "
           "top_n_sigma=%.9g xtc_p=%.9g xtc_t=%.9g min_keep=%d mirostat=%d tau=%.9g eta=%.9g order=%s "
           "ad_t=%.9g ad_d=%.9g\n",
           p.temp, p.dyn_range, p.dyn_exp, p.top_k, p.top_p, p.min_p, p.typ_p, p.top_n_sigma, p.xtc_p,
           p.xtc_t, p.min_keep, p.mirostat, p.tau, p.eta, p.order.c_str(), p.ad_target, p.ad_decay);
}

// One seeded chain (common/sampling.cpp's: the stages, then dist unless Mirostat or adaptive-p
// draws) over all the rows; each row's pick printed and accepted (the penalties' window).
static void run_draws(const char *name, const params &p, int n_rows, int vocab, float spread)
{
    print_params(name, p);
    printf("seed %u\n", p.seed);
    if (p.order.find('e') != std::string::npos)
        printf("penalties repeat=%.9g freq=%.9g present=%.9g last_n=%d\n", p.pen_repeat, p.pen_freq, p.pen_present, p.pen_last_n);
    llama_sampler *chain = make_chain(p, vocab);
    if (!p.mirostat && p.order.find('a') == std::string::npos) llama_sampler_chain_add(chain, llama_sampler_init_dist(p.seed));
    for (int r = 0; r < n_rows; r++) {
        std::vector<llama_token_data> data = next_row(vocab, spread);
        llama_token_data_array arr = {data.data(), (size_t)vocab, -1, false};
        llama_sampler_apply(chain, &arr);
        const llama_token id = arr.data[arr.selected].id;
        printf("draw %d\n", id);
        llama_sampler_accept(chain, id);
    }
    llama_sampler_free(chain);
    printf("end\n");
}

static void run_case(const char *name, const params &p, const std::vector<int> &vocabs, float spread)
{
    print_params(name, p);
    if (p.order.find('d') != std::string::npos) {
        printf("dry mult=%.9g base=%.9g allowed=%d last_n=%d\n", p.dry_mult, p.dry_base, p.dry_allowed, p.dry_last_n);
        for (const auto &b : p.breakers) {
            printf("breaker %zu", b.size());
            for (llama_token t : b) printf(" %d", t);
            printf("\n");
        }
        printf("accept %zu", p.history.size());
        for (llama_token t : p.history) printf(" %d", t);
        printf("\n");
    }
    llama_sampler *chain = nullptr;
    const bool stateful = p.mirostat || p.order.find('a') != std::string::npos;   // mu, the EMA: one chain
    for (int vocab : vocabs) {
        if (!chain) {   // mirostat: one chain (mu) across the rows
            chain = make_chain(p, vocab);
            for (llama_token t : p.history) llama_sampler_accept(chain, t);
        }
        std::vector<llama_token_data> data = next_row(vocab, spread);
        llama_token_data_array arr = {data.data(), (size_t)vocab, -1, false};
        llama_sampler_apply(chain, &arr);
        std::map<int, double> keep;
        if (stateful) {
            for (size_t i = 0; i < arr.size; i++)
                if (arr.data[i].logit != -INFINITY) keep[arr.data[i].id] = arr.data[i].p;
        } else {
            double mx = -INFINITY, sum = 0.0;
            for (size_t i = 0; i < arr.size; i++) mx = std::max(mx, (double)arr.data[i].logit);
            for (size_t i = 0; i < arr.size; i++)
                if (arr.data[i].logit != -INFINITY) sum += std::exp((double)arr.data[i].logit - mx);
            for (size_t i = 0; i < arr.size; i++)
                if (arr.data[i].logit != -INFINITY) keep[arr.data[i].id] = std::exp((double)arr.data[i].logit - mx) / sum;
        }
        printf("keep %zu", keep.size());
        for (auto &kv : keep) printf(" %d %.9g", kv.first, kv.second);
        printf("\n");
        if (stateful) {
            printf("pick %d\n", arr.data[arr.selected].id);
            llama_sampler_accept(chain, arr.data[arr.selected].id);   // adaptive-p's EMA update
        }
        if (!stateful) {
            llama_sampler_free(chain);
            chain = nullptr;
        }
    }
    if (chain) llama_sampler_free(chain);
    printf("end\n");
}

// The first members of src/llama-sampler.cpp's struct llama_sampler_dry, to read the breakers
// llama_sampler_init_dry made from strings (get_overlapping_token_sequences is static there):
// the same compiler and headers give the same layout.
struct dry_prefix {
    const float dry_multiplier;
    const float dry_base;
    const int32_t dry_allowed_length;
    const int32_t dry_penalty_last_n;
    std::unordered_multimap<llama_token, std::vector<llama_token>> dry_processed_breakers;
};

// --breakers MODEL.gguf: for each text, the token sequences DRY breaks on (tests/test_dry_breakers.c)
static int breakers(const char *path)
{
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *m = llama_model_load_from_file(path, mp);
    if (!m) return 1;
    const llama_vocab *v = llama_model_get_vocab(m);
    const char *texts[] = {"\n", ":", "\"", "*", "\n\n", "###", "User:", " the", "<|im_end|>", "ab\ncd",
                           // 40 bytes, over 20 ids: the tails are cut at 20, and equal cut tails count once
                           "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", "1234567890123456789012345678901234567890"};
    printf("# DRY's sequence breakers of llama.cpp's llama_sampler_init_dry (max 20 tail ids)\n");
    for (const char *t : texts) {
        llama_sampler *d = llama_sampler_init_dry(v, 1.0f, 1.75f, 2, 64, &t, 1);
        auto *ctx = (dry_prefix *)d->ctx;
        std::vector<std::vector<llama_token>> seqs;
        for (auto &kv : ctx->dry_processed_breakers) {
            std::vector<llama_token> q = {kv.first};
            q.insert(q.end(), kv.second.begin(), kv.second.end());
            seqs.push_back(q);
        }
        std::sort(seqs.begin(), seqs.end());
        printf("text");
        for (const char *c = t; *c; c++) printf(" %d", (unsigned char)*c);
        printf("\nseqs %zu\n", seqs.size());
        for (auto &q : seqs) {
            printf("%zu", q.size());
            for (llama_token x : q) printf(" %d", x);
            printf("\n");
        }
        llama_sampler_free(d);
    }
    llama_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--breakers")) return breakers(argv[2]);
    printf("# llama.cpp's samplers on fixed logit rows (scripts/make_sampler_fixtures.sh)\n");
    const std::vector<int> rows = {64, 64, 257}, rows_long = {64, 257, 3000};
    params p;
    p = params(); p.top_k = 5; p.order = "k"; run_case("top_k", p, rows, 6.0f);
    p = params(); p.top_k = 40; p.order = "k"; run_case("top_k_40", p, rows_long, 6.0f);
    p = params(); p.top_p = 0.9f; p.order = "p"; run_case("top_p", p, rows, 6.0f);
    p = params(); p.top_p = 0.5f; p.min_keep = 7; p.order = "p"; run_case("top_p_min_keep", p, rows, 6.0f);
    p = params(); p.top_p = 0.99f; p.order = "p"; run_case("top_p_wide", p, rows_long, 2.0f);
    p = params(); p.min_p = 0.05f; p.order = "m"; run_case("min_p", p, rows_long, 6.0f);
    p = params(); p.min_p = 0.3f; p.min_keep = 12; p.order = "m"; run_case("min_p_min_keep", p, rows, 6.0f);
    p = params(); p.typ_p = 0.7f; p.order = "y"; run_case("typical", p, rows, 6.0f);
    p = params(); p.typ_p = 0.3f; p.min_keep = 4; p.order = "y"; run_case("typical_min_keep", p, rows, 3.0f);
    p = params(); p.top_n_sigma = 1.0f; p.order = "s"; run_case("top_n_sigma", p, rows, 6.0f);
    p = params(); p.top_n_sigma = 2.5f; p.order = "st"; run_case("top_n_sigma_temp", p, rows, 3.0f);
    p = params(); p.xtc_p = 1.0f; p.xtc_t = 0.1f; p.order = "x"; run_case("xtc", p, rows, 4.0f);
    p = params(); p.xtc_p = 1.0f; p.xtc_t = 0.02f; p.min_keep = 5; p.order = "x"; run_case("xtc_min_keep", p, rows, 2.0f);
    p = params(); p.temp = 0.7f; p.order = "t"; run_case("temp", p, rows, 6.0f);
    p = params(); p.temp = 0.0f; p.order = "kt"; p.top_k = 10; run_case("temp_zero", p, rows, 6.0f);
    p = params(); p.temp = 0.8f; p.dyn_range = 0.5f; p.order = "t"; run_case("dynatemp", p, rows, 3.0f);
    p = params(); p.temp = 1.0f; p.dyn_range = 0.6f; p.dyn_exp = 2.0f; p.order = "t"; run_case("dynatemp_exp", p, rows, 1.5f);
    p = params(); p.top_k = 40; p.top_p = 0.95f; p.min_p = 0.05f; p.temp = 0.8f;
    run_case("llamacpp_default", p, rows_long, 4.0f);
    p = params(); p.top_n_sigma = 3.0f; p.top_k = 50; p.typ_p = 0.95f; p.top_p = 0.9f; p.min_p = 0.02f;
    p.xtc_p = 1.0f; p.xtc_t = 0.15f; p.temp = 1.2f; p.dyn_range = 0.3f; p.min_keep = 2;
    run_case("all", p, rows, 3.0f);
    p = params(); p.temp = 0.7f; p.top_p = 0.9f; p.min_p = 0.05f; p.order = "tpm"; run_case("hf_order", p, rows, 4.0f);
    const std::vector<int> steps = {257, 257, 257, 257, 257, 257, 257, 257};
    p = params(); p.mirostat = 2; p.tau = 5.0f; p.eta = 0.1f; p.temp = 0.8f; run_case("mirostat_v2", p, steps, 4.0f);
    p = params(); p.mirostat = 2; p.tau = 2.0f; p.eta = 0.5f; p.temp = 1.0f; run_case("mirostat_v2_low", p, steps, 3.0f);
    p = params(); p.mirostat = 1; p.tau = 5.0f; p.eta = 0.1f; p.temp = 0.8f; run_case("mirostat_v1", p, steps, 4.0f);
    p = params(); p.mirostat = 1; p.tau = 3.0f; p.eta = 0.3f; p.temp = 1.0f; run_case("mirostat_v1_low", p, steps, 3.0f);
    // long rows: typical's selection past its first 256 (model/sampler.c), top-p's past 256
    p = params(); p.typ_p = 0.9f; p.order = "y"; run_case("typical_long", p, rows_long, 6.0f);
    p = params(); p.typ_p = 0.9f; p.order = "y"; run_case("typical_flat", p, rows_long, 0.5f);
    p = params(); p.top_p = 0.9f; p.order = "p"; run_case("top_p_flat", p, rows_long, 0.5f);
    // DRY: histories over a small alphabet (many repeats), token breakers of one and two ids
    auto history = [](int n, int alphabet, const std::vector<llama_token> &motif) {
        std::vector<llama_token> h;
        while ((int)h.size() < n) {
            if (uniform() < 0.5) h.insert(h.end(), motif.begin(), motif.end());
            else h.push_back((llama_token)(uniform() * alphabet));
        }
        h.resize(n);
        return h;
    };
    p = params(); p.order = "d"; p.dry_mult = 0.8f; p.breakers = {{5}}; p.history = history(80, 12, {1, 2, 3, 4});
    run_case("dry", p, rows, 1.0f);
    p = params(); p.order = "d"; p.dry_mult = 1.5f; p.dry_base = 2.0f; p.dry_allowed = 1; p.dry_last_n = 40;
    p.breakers = {{7, 8}, {9}, {7, 3}}; p.history = history(60, 10, {7, 8, 1, 2, 3}); run_case("dry_breakers", p, rows, 1.0f);
    p = params(); p.order = "d"; p.dry_mult = 0.5f; p.dry_base = 1.0f; p.dry_allowed = 0; p.breakers = {};
    p.history = history(30, 6, {0, 1}); run_case("dry_base_1", p, rows, 1.0f);
    p = params(); p.order = "d"; p.dry_mult = 0.8f; p.dry_base = 20.0f; p.dry_allowed = 2; p.dry_last_n = 64;
    p.breakers = {{60}}; p.history.clear();   // periodic: repeats of ~60 tokens, past the clamp (88.72 / ln 20 = 29)
    for (int i = 0; i < 20; i++) p.history.insert(p.history.end(), {1, 2, 0, 1, 1});
    run_case("dry_clamp", p, rows, 1.0f);
    p = params(); p.order = "d"; p.dry_mult = 0.8f; p.breakers = {{5}, {6, 2}}; p.history = history(50, 8, {1, 2, 3, 6, 2, 1, 2, 3});
    p.history.push_back(6); p.history.push_back(2); p.history.push_back(1); p.history.push_back(2);
    run_case("dry_breaker_near_end", p, rows, 1.0f);
    // a single-token breaker that would extend a repeat is never penalized: 5 follows "1 2" earlier
    p = params(); p.order = "d"; p.dry_mult = 0.8f; p.breakers = {{5}}; p.history = history(20, 5, {1, 2});
    p.history.insert(p.history.end(), {1, 2, 5, 3, 4, 1, 2}); run_case("dry_breaker_next", p, rows, 1.0f);
    // adaptive-p over steps (its EMA moves the target), behind other stages and alone
    p = params(); p.order = "kta"; p.top_k = 30; p.ad_target = 0.3f; p.ad_decay = 0.9f; run_case("adaptive_p", p, steps, 3.0f);
    p = params(); p.order = "ta"; p.temp = 1.0f; p.ad_target = 0.05f; p.ad_decay = 0.5f; run_case("adaptive_p_low", p, steps, 1.0f);
    p = params(); p.order = "pta"; p.top_p = 0.95f; p.ad_target = 0.9f; p.ad_decay = 0.0f; run_case("adaptive_p_decay0", p, steps, 4.0f);
    p = params(); p.order = "dkpt"; p.dry_mult = 0.8f; p.top_k = 20; p.top_p = 0.9f; p.breakers = {{5}};
    p.history = history(70, 12, {1, 2, 3, 4, 5, 6}); run_case("dry_chain", p, rows, 2.0f);
    // the draws: llama.cpp's picks from one seeded chain over 16 rows (model/sampler_rng.c)
    p = params(); p.order = "edskypmxt"; p.top_k = 40; p.top_p = 0.95f; p.min_p = 0.05f;
    run_draws("draw_default", p, 16, 3000, 1.5f);
    p = params(); p.order = "t"; p.temp = 1.0f; run_draws("draw_temp_only", p, 16, 3000, 1.0f);
    p = params(); p.order = "pt"; p.top_p = 0.9f; p.temp = 0.9f; p.seed = 0; run_draws("draw_top_p", p, 16, 3000, 1.0f);
    p = params(); p.order = "mt"; p.min_p = 0.1f; p.temp = 1.5f; p.seed = 1234567; run_draws("draw_min_p", p, 16, 3000, 1.0f);
    p = params(); p.order = "yt"; p.typ_p = 0.9f; run_draws("draw_typical", p, 16, 3000, 1.5f);
    p = params(); p.order = "kxt"; p.top_k = 20; p.xtc_p = 0.5f; p.xtc_t = 0.05f; p.seed = 7;
    run_draws("draw_xtc", p, 16, 257, 1.0f);
    p = params(); p.order = "st"; p.top_n_sigma = 1.5f; p.temp = 1.2f; run_draws("draw_top_n_sigma", p, 16, 3000, 1.0f);
    p = params(); p.order = "t"; p.temp = 0.9f; p.dyn_range = 0.5f; p.seed = 4294967294u;
    run_draws("draw_dynatemp", p, 16, 257, 1.5f);
    p = params(); p.order = "ekt"; p.top_k = 8; p.pen_repeat = 1.5f; p.pen_freq = 0.3f; p.pen_present = 0.2f;
    p.pen_last_n = 6; run_draws("draw_penalties", p, 16, 64, 1.0f);
    p = params(); p.mirostat = 1; p.temp = 1.0f; p.seed = 99; run_draws("draw_mirostat_v1", p, 16, 3000, 1.5f);
    p = params(); p.mirostat = 2; p.temp = 1.0f; p.tau = 3.0f; p.seed = 99; run_draws("draw_mirostat_v2", p, 16, 3000, 1.5f);
    p = params(); p.order = "kta"; p.top_k = 30; p.ad_target = 0.3f; p.ad_decay = 0.9f; p.seed = 5;
    run_draws("draw_adaptive_p", p, 16, 257, 2.0f);
    p = params(); p.order = "kta"; p.top_k = 30; p.ad_target = -1.0f; p.seed = 5;
    run_draws("draw_adaptive_p_off", p, 16, 257, 2.0f);
    // min-p 0.5 over a flat row with a few strong tokens: some rows leave one candidate, from
    // which llama.cpp's dist still draws (the stream stays aligned)
    p = params(); p.order = "mt"; p.min_p = 0.5f; p.temp = 1.0f; p.seed = 3; run_draws("draw_one_left", p, 24, 257, 0.5f);
    return 0;
}
