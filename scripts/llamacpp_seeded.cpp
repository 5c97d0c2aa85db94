// llamacpp_seeded.cpp — llama.cpp's own sampled generation, as llama-cli makes it: the model
// run by libllama on given prompt ids, the tokens drawn by common/sampling.cpp's
// common_sampler (its default chain with the settings given, seeded), the prompt accepted
// (not generated) and each drawn token accepted. Prints the drawn ids, one line; with
// LLAMACPP_CANDIDATES set, each step's candidates (in list order) and the index drawn on stderr,
// as "step I selected K ids A B C ... p PA PB PC ..." (p: the draw's normalized probabilities).
// The reference
// of bench/seeded_vs_llamacpp.py (how long llm-run's seeded text stays llama.cpp's).
// Built by that script against the llama.cpp of bench/llamacpp.sh.
//
//   llamacpp_seeded MODEL.gguf SEED N TEMP TOP_K TOP_P MIN_P ID,ID,...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"
#include "sampling.h"

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: %s MODEL SEED N TEMP TOP_K TOP_P MIN_P ID,ID,...\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> prompt;
    for (char *p = argv[8]; *p;) {
        prompt.push_back((llama_token)strtol(p, &p, 10));
        if (*p == ',') p++;
    }
    const int n = atoi(argv[3]);
    const bool cands = getenv("LLAMACPP_CANDIDATES") != nullptr;
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(prompt.size() + n + 8);
    cp.n_batch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;

    common_params_sampling sp;   // llama-cli's defaults, then the settings given
    sp.seed = (uint32_t)strtoul(argv[2], nullptr, 10);
    sp.temp = strtof(argv[4], nullptr);
    sp.top_k = atoi(argv[5]);
    sp.top_p = strtof(argv[6], nullptr);
    sp.min_p = strtof(argv[7], nullptr);
    common_sampler *smpl = common_sampler_init(model, sp);
    if (!smpl) return 1;
    for (llama_token t : prompt) common_sampler_accept(smpl, t, false);

    llama_batch batch = llama_batch_get_one(prompt.data(), (int32_t)prompt.size());
    if (llama_decode(ctx, batch)) return 1;
    for (int i = 0; i < n; i++) {
        llama_token id = common_sampler_sample(smpl, ctx, -1);
        if (cands) {   // the chain's candidates, in the order the draw went through them
            const llama_token_data_array *cp = common_sampler_get_candidates(smpl, false);
            fprintf(stderr, "step %d selected %lld ids", i, (long long)cp->selected);
            for (size_t j = 0; j < cp->size; j++) fprintf(stderr, " %d", cp->data[j].id);
            fprintf(stderr, " p");
            for (size_t j = 0; j < cp->size; j++) fprintf(stderr, " %.9g", cp->data[j].p);
            fprintf(stderr, "\n");
        }
        common_sampler_accept(smpl, id, true);
        printf(i ? ",%d" : "%d", id);
        batch = llama_batch_get_one(&id, 1);
        if (llama_decode(ctx, batch)) return 1;
    }
    printf("\n");
    common_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
