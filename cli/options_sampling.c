/* options_sampling.c — llama.cpp's other samplers as llama-cli takes them (common/arg.cpp of the
 * llama.cpp bench/llamacpp.sh builds): --typical, --top-nsigma, --xtc-probability/-threshold,
 * --dynatemp-range/-exp, --mirostat/-lr/-ent, --min-keep, and the chain's order (--samplers
 * names, --sampling-seq letters), -l (the logit bias), DRY (--dry-*, its breakers mapped to
 * token sequences with the model's tokenizer), adaptive-p; model/sampler.c runs them as llama.cpp
 * does. eval and compare decode greedily: they refuse all of these (cli_llama_unused reads
 * sampler_flag). */
#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define O ((run_options *)ctx)
#define SETTER(name) static int name(void *ctx, const char *f, const char *v)

static int set_f(run_options *o, const char *f, const char *v, double lo, double hi, float *out)
{
    double d;
    if (cli_float(f, v, lo, hi, &d) != 0) return 2;
    *out = (float)d;
    o->sampler_flag = f;
    return 0;
}

static int set_i(run_options *o, const char *f, const char *v, long lo, long hi, int *out)
{
    if (cli_int(f, v, lo, hi, out) != 0) return 2;
    o->sampler_flag = f;
    return 0;
}

SETTER(set_typical) { return set_f(O, f, v, 0, 1, &O->typical_p); }
SETTER(set_top_n_sigma) { return set_f(O, f, v, -1, 1e6, &O->top_n_sigma); }
SETTER(set_xtc_p) { return set_f(O, f, v, 0, 1, &O->xtc_probability); }
SETTER(set_xtc_t) { return set_f(O, f, v, 0, 1, &O->xtc_threshold); }
SETTER(set_dyn_range) { return set_f(O, f, v, 0, 100, &O->dynatemp_range); }
SETTER(set_dyn_exp) { return set_f(O, f, v, 0, 100, &O->dynatemp_exp); }
SETTER(set_mirostat_lr) { return set_f(O, f, v, 0, 100, &O->mirostat_lr); }
SETTER(set_mirostat_ent) { return set_f(O, f, v, 0, 1000, &O->mirostat_ent); }
SETTER(set_mirostat) { return set_i(O, f, v, 0, 2, &O->mirostat); }
SETTER(set_min_keep) { return set_i(O, f, v, 0, INT_MAX, &O->min_keep); }

/* A stage letter of model/model.h SAMPLER_STAGES, or a refusal for llama.cpp's stages llm-run has
 * not: 0, or 2 after printing. */
static int stage_ok(const char *f, char c, const char *as)
{
    if (c == 'i') return cli_die("%s %s: infill is for fill-in-the-middle models; llm-run has no infill sampler", f, as);
    if (!c || !strchr(SAMPLER_STAGES, c))
        return cli_die("%s: unknown sampler '%s' (one of penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, "
                       "xtc, temperature, adaptive_p; letters e d s k y p m x t a)", f, as);
    return 0;
}

static int add_stage(run_options *o, const char *f, char c, const char *as, size_t *n)
{
    if (stage_ok(f, c, as)) return 2;
    if (*n + 1 >= sizeof o->sampler_order) return cli_die("%s: at most %zu stages", f, sizeof o->sampler_order - 1);
    o->sampler_order[(*n)++] = c;
    o->sampler_order[*n] = '\0';
    return 0;
}

/* --samplers: names separated by ';' in llama.cpp's spellings (common_sampler_types_from_names:
 * top_k, top-k, topk, nucleus, temp, typ, ...), any case */
SETTER(set_samplers) {
    static const struct { const char *name; char c; } names[] = {
        {"penalties", 'e'}, {"dry", 'd'}, {"topnsigma", 's'}, {"topk", 'k'}, {"typp", 'y'}, {"typ", 'y'},
        {"topp", 'p'}, {"nucleus", 'p'}, {"minp", 'm'}, {"xtc", 'x'}, {"temperature", 't'}, {"temp", 't'},
        {"infill", 'i'}, {"adaptivep", 'a'}};
    size_t n = 0;
    O->sampler_order[0] = '\0';
    for (const char *p = v;;) {
        const char *e = strchr(p, ';');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        char key[32], name[32];
        size_t k = 0;
        if (len >= sizeof name) return cli_die("%s: unknown sampler '%.*s'", f, (int)len, p);
        memcpy(name, p, len);
        name[len] = '\0';
        for (size_t i = 0; i < len; i++)   /* "top_k", "top-k" and "TopK" are "topk" */
            if (p[i] != '_' && p[i] != '-') key[k++] = (char)tolower((unsigned char)p[i]);
        key[k] = '\0';
        char c = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!strcmp(key, names[i].name)) c = names[i].c;
        if (len && add_stage(O, f, c, name, &n)) return 2;
        if (!e) break;
        p = e + 1;
    }
    if (!n) return cli_die("%s: no sampler named", f);
    O->sampler_flag = f;
    return 0;
}

/* --sampling-seq: llama.cpp's letters (common_sampler_types_from_chars) */
SETTER(set_sampling_seq) {
    size_t n = 0;
    O->sampler_order[0] = '\0';
    for (const char *p = v; *p; p++) {
        const char as[2] = {*p, '\0'};
        if (add_stage(O, f, *p, as, &n)) return 2;
    }
    if (!n) return cli_die("%s: no sampler named", f);
    O->sampler_flag = f;
    return 0;
}

/* -l ID(+|-)BIAS, llama.cpp's format: "15043+1", "15043-inf" (bans the token) */
SETTER(set_logit_bias) {
    char *e;
    errno = 0;
    const long id = strtol(v, &e, 10);
    if (e == v || errno || id < 0 || id > INT_MAX || (*e != '+' && *e != '-'))
        return cli_die("%s %s: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (15043+1, 15043-inf)", f, v);
    const char sign = *e++;
    char *end;
    const float b = strtof(e, &end);
    if (end == e || *end || isnan(b) || *e == '+' || *e == '-')
        return cli_die("%s %s: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (15043+1, 15043-inf)", f, v);
    if (O->n_logit_bias >= (int)(sizeof O->logit_bias / sizeof O->logit_bias[0])) return cli_die("%s: at most 64", f);
    O->logit_bias_id[O->n_logit_bias] = (int)id;
    O->logit_bias[O->n_logit_bias++] = sign == '-' ? -b : b;
    O->sampler_flag = f;
    return 0;
}

/* DRY (model/sampler_dry.c) */
SETTER(set_dry_mult) { return set_f(O, f, v, -1e6, 1e6, &O->dry_multiplier); }
SETTER(set_dry_base) { return set_f(O, f, v, 1, 1e6, &O->dry_base); }
SETTER(set_dry_allowed) { return set_i(O, f, v, 0, INT_MAX, &O->dry_allowed_length); }
SETTER(set_dry_last_n) { return set_i(O, f, v, -1, INT_MAX, &O->dry_last_n); }
/* the first one replaces llama.cpp's defaults; "none": no breakers */
SETTER(set_dry_breaker) {
    if (O->n_dry_breakers < 0 || !strcmp(v, "none")) O->n_dry_breakers = 0;
    if (!strcmp(v, "none")) return 0;
    if (!*v) return cli_die("%s: empty text", f);
    if (O->n_dry_breakers >= (int)(sizeof O->dry_breakers / sizeof O->dry_breakers[0])) return cli_die("%s: at most 16", f);
    O->dry_breakers[O->n_dry_breakers++] = v;
    O->sampler_flag = f;
    return 0;
}
SETTER(set_adaptive_target) { return set_f(O, f, v, -1e6, 1, &O->adaptive_target); }
SETTER(set_adaptive_decay) { return set_f(O, f, v, 0, 0.99, &O->adaptive_decay); }

#undef O

const cli_opt cli_sampling_options[] = {
    {"--typical", "--typical-p", "F", "locally typical sampling (Meister et al.): the tokens whose surprise is\n"
     "closest to the entropy, up to mass F (default 1 = off)", CLI_G_GEN, 0, set_typical},
    {"--top-nsigma", "--top-n-sigma", "F", "top-n-sigma (Tang et al.): keep logits >= max - F x their std\n"
     "(default -1 = off)", CLI_G_GEN, 0, set_top_n_sigma},
    {"--xtc-probability", NULL, "F", "XTC (exclude top choices): with probability F drop every token with\n"
     "p >= --xtc-threshold but the least likely of them (default 0 = off)", CLI_G_GEN, 0, set_xtc_p},
    {"--xtc-threshold", NULL, "F", "XTC's threshold (default 0.1; > 0.5 = off)", CLI_G_GEN, 0, set_xtc_t},
    {"--dynatemp-range", NULL, "F", "dynamic temperature: --temp +- F, mapped from the candidates' normalized\n"
     "entropy (default 0 = off)", CLI_G_GEN, 0, set_dyn_range},
    {"--dynatemp-exp", NULL, "F", "dynamic temperature's exponent on the entropy (default 1)", CLI_G_GEN, 0, set_dyn_exp},
    {"--mirostat", NULL, "N", "Mirostat: 1 (Basu et al.), 2 (Mirostat 2.0); replaces the chain as in llama.cpp\n"
     "(--temp, then Mirostat; top-k, top-p, typical, min-p, penalties unused; default 0 = off)", CLI_G_GEN, 0, set_mirostat},
    {"--mirostat-lr", NULL, "F", "Mirostat's learning rate eta (default 0.1)", CLI_G_GEN, 0, set_mirostat_lr},
    {"--mirostat-ent", NULL, "F", "Mirostat's target surprise tau, bits (default 5)", CLI_G_GEN, 0, set_mirostat_ent},
    {"--min-keep", NULL, "N", "top-p, min-p, typical and XTC keep at least N tokens (default 0)", CLI_G_GEN, 0, set_min_keep},
    {"--samplers", NULL, "LIST", "the chain's order, names separated by ';'; llama.cpp's default\n"
     "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature puts the\n"
     "temperature last (top-p, min-p see the logits unscaled); Hugging Face's order has it\n"
     "first (temperature;top_k;top_p;min_p)", CLI_G_GEN, 0, set_samplers},
    {"--sampling-seq", "--sampler-seq", "LETTERS", "the order as llama.cpp's letters (default edskypmxt)", CLI_G_GEN, 0, set_sampling_seq},
    {"--logit-bias", "-l", "ID+B", "add B to token ID's logit before sampling (ID-B subtracts; ID-inf bans it;\n"
     "up to 64; greedy decoding too)", CLI_G_GEN, 0, set_logit_bias},
    {"--dry-multiplier", NULL, "F", "DRY (don't repeat yourself): a token extending a repeat of n >=\n"
     "--dry-allowed-length tokens of the last --dry-penalty-last-n loses F x base^(n - allowed)\n"
     "(default 0 = off; llama.cpp's sampler, in the chain after the penalties)", CLI_G_GEN, 0, set_dry_mult},
    {"--dry-base", NULL, "F", "DRY's base (default 1.75; >= 1)", CLI_G_GEN, 0, set_dry_base},
    {"--dry-allowed-length", NULL, "N", "repeats up to N tokens go free (default 2)", CLI_G_GEN, 0, set_dry_allowed},
    {"--dry-penalty-last-n", NULL, "N", "DRY's window of prompt and output (default 64; 0 off, -1 the context)", CLI_G_GEN, 0, set_dry_last_n},
    {"--dry-sequence-breaker", NULL, "TEXT", "a text that cuts repeats (repeatable, up to 16; the first replaces\n"
     "the defaults \\n : \" *; none: no breakers; -e processes escapes in it)", CLI_G_GEN, 0, set_dry_breaker},
    {"--adaptive-target", NULL, "F", "adaptive-p (llama.cpp's, PR 17927): the draw favours tokens whose p is near\n"
     "a target that moves with the p of the tokens taken (0..1; default -1 = off); at the\n"
     "chain's end, added there when --samplers does not name adaptive_p", CLI_G_GEN, 0, set_adaptive_target},
    {"--adaptive-decay", NULL, "F", "adaptive-p's EMA decay (0..0.99; default 0.9)", CLI_G_GEN, 0, set_adaptive_decay},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

/* DRY's breakers as token sequences (tokenizer_overlaps, at most 20 ids after the head and 40
 * bytes of text, as llama.cpp), then sampler_set_dry */
static int dry_apply(const run_options *o, sampler *s, const struct tokenizer *tok, int context)
{
    static const char *const defaults[] = {"\n", ":", "\"", "*"};
    const int last_n = o->dry_last_n < 0 ? context : o->dry_last_n;
    if (o->dry_multiplier == 0.0f || last_n == 0) return 0;
    const int nb = o->n_dry_breakers < 0 ? 4 : o->n_dry_breakers;
    const char *const *texts = o->n_dry_breakers < 0 ? defaults : o->dry_breakers;
    if (nb && !tok)
        return cli_die("--dry-multiplier: sequence breakers need the model's tokenizer (--dry-sequence-breaker none "
                       "runs DRY without)");
    int *seq = NULL, *len = NULL, n = 0, rc = 0;
    size_t n_seq = 0;
    for (int b = 0; b < nb && !rc; b++) {
        int *bs, *bl, bn;
        char err[256];
        const size_t tl = strlen(texts[b]) < 40 ? strlen(texts[b]) : 40;
        if (tokenizer_overlaps(tok, texts[b], tl, 20, &bs, &bl, &bn, err, sizeof err) != 0) {
            rc = cli_die("--dry-sequence-breaker: %s", err);
            break;
        }
        size_t add = 0;
        for (int i = 0; i < bn; i++) add += (size_t)bl[i];
        int *ns = realloc(seq, (n_seq + add + 1) * sizeof *ns), *nl = realloc(len, ((size_t)(n + bn) + 1) * sizeof *nl);
        if (ns) seq = ns;
        if (nl) len = nl;
        if (!ns || !nl) rc = cli_die("out of memory");
        else {
            if (add) memcpy(seq + n_seq, bs, add * sizeof *bs);
            if (bn) memcpy(len + n, bl, (size_t)bn * sizeof *bl);
            n_seq += add;
            n += bn;
        }
        free(bs);
        free(bl);
    }
    if (!rc && sampler_set_dry(s, o->dry_multiplier, o->dry_base, o->dry_allowed_length, last_n, seq, len, n) != 0)
        rc = cli_die("out of memory");
    free(seq);
    free(len);
    return rc;
}

int cli_sampling_apply(const run_options *o, sampler *s, const struct tokenizer *tok, int context)
{
    for (int i = 0; i < o->n_logit_bias; i++)
        if (o->logit_bias_id[i] >= s->vocab)
            return cli_die("-l %d: token id out of range [0, %d)", o->logit_bias_id[i], s->vocab);
    if (sampler_set_logit_bias(s, o->logit_bias_id, o->logit_bias, o->n_logit_bias) != 0) return cli_die("out of memory");
    s->min_p = o->min_p;
    s->typical_p = o->typical_p;
    s->top_n_sigma = o->top_n_sigma;
    s->xtc_probability = o->xtc_probability;
    s->xtc_threshold = o->xtc_threshold;
    s->dynatemp_range = o->dynatemp_range;
    s->dynatemp_exponent = o->dynatemp_exp;
    s->min_keep = o->min_keep;
    char order[sizeof o->sampler_order + 1];
    snprintf(order, sizeof order, "%s", o->sampler_order[0] ? o->sampler_order : SAMPLER_ORDER_DEFAULT);
    if (o->adaptive_target >= 0.0f && !strchr(order, 'a')) strcat(order, "a");   /* llama.cpp would ignore the target */
    if (sampler_set_order(s, order) != 0) return cli_die("--samplers: at most %zu stages with adaptive_p", sizeof o->sampler_order - 1);
    if ((o->adaptive_target >= 0.0f || strchr(order, 'a')) && sampler_set_adaptive(s, o->adaptive_target, o->adaptive_decay) != 0)
        return cli_die("out of memory");
    sampler_set_mirostat(s, o->mirostat, o->mirostat_ent, o->mirostat_lr);
    return dry_apply(o, s, tok, context);
}
