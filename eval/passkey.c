/* passkey.c — synthetic long-context retrieval prompts, generated in-process from a seed:
 *   passkey: a 5-digit key in repeated filler ("The grass is green. ..."; Landmark Attention's
 *            passkey test), the question "What is the pass key?";
 *   niah:    a needle sentence ("The special magic number for Lisbon is 12345.") in real text
 *            (the --data file, e.g. WikiText), the question about it.
 * The sweep sizes the haystack with the model's tokenizer (sweep_items.c) so the templated
 * prompt has at most L tokens; here a prompt is rendered for a given number of haystack units
 * with the needle after round(depth · units) of them. Scoring: the key appears in the output. */
#include "eval/eval.h"
#include "eval/util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FILLER[] = {"The grass is green.", "The sky is blue.", "The sun is yellow.",
                                     "Here we go.", "There and back again."};
static const char *const TOPICS[] = {"Lisbon", "Nairobi", "Osaka", "Quito", "Tromso", "Adelaide",
                                     "Cusco", "Tbilisi", "Dakar", "Hanoi", "Reykjavik", "Valparaiso"};
static const char INSTR[] = "There is an important piece of information hidden inside a lot of irrelevant text. "
                            "Find it and memorize it. I will quiz you about it.";
static const char INSTR_NIAH[] = "Some special magic numbers are hidden inside the following text. "
                                 "Make sure to memorize them. I will quiz you about the numbers afterwards.";

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void adds(eval_sbuf *b, const char *s) { eval_sb_add(b, s, strlen(s)); }

/* niah: the next whitespace-separated word of text from *at (wrapping to the start); its bytes
 * in [*w0, *w1). */
static void next_word(const char *text, size_t len, size_t *at, size_t *w0, size_t *w1)
{
    for (int pass = 0; pass < 2; pass++) {
        while (*at < len && isspace((unsigned char)text[*at])) (*at)++;
        if (*at < len) break;
        *at = 0;
    }
    *w0 = *at;
    while (*at < len && !isspace((unsigned char)text[*at])) (*at)++;
    *w1 = *at;
}

int eval_passkey_render(const eval_passkey_spec *s, int units, eval_passkey_prompt *out)
{
    memset(out, 0, sizeof *out);
    uint64_t r = mix(s->seed ^ 0x9A55C0DEull);
    snprintf(out->key, sizeof out->key, "%05d", (int)(10000 + r % 90000));
    const char *topic = TOPICS[mix(r) % (sizeof TOPICS / sizeof TOPICS[0])];
    char needle[160], question[160];
    if (s->niah) {
        snprintf(needle, sizeof needle, "The special magic number for %s is %s.", topic, out->key);
        snprintf(question, sizeof question, "What is the special magic number for %s mentioned in the text? Answer with the number.", topic);
    } else {
        snprintf(needle, sizeof needle, "The pass key is %s. Remember it. %s is the pass key.", out->key, out->key);
        snprintf(question, sizeof question, "What is the pass key? Answer with the 5-digit number.");
    }
    size_t tlen = s->text ? strlen(s->text) : 0;
    if (s->niah && tlen == 0) return -1;
    if (units < 0) units = 0;
    int at_unit = (int)lround(s->depth * units);
    if (at_unit > units) at_unit = units;
    eval_sbuf b = {0};
    adds(&b, s->niah ? INSTR_NIAH : INSTR);
    if (s->question_first) {
        adds(&b, " ");
        out->question[0] = (int)b.n;
        adds(&b, question);
        out->question[1] = (int)b.n;
    }
    adds(&b, "\n\n");
    out->haystack[0] = (int)b.n;
    size_t at = s->niah ? (size_t)(mix(r ^ 0x7E57) % (tlen / 2 + 1)) : 0;
    if (s->niah) {   /* start at a line */
        while (at > 0 && at < tlen && s->text[at - 1] != '\n') at++;
        if (at >= tlen) at = 0;
    }
    int want = !s->no_needle, placed = 0, pending = 0;
    size_t h0 = b.n;
#define SEP() do { if (b.n > h0) adds(&b, " "); } while (0)
#define PLACE() do { SEP(); out->needle[0] = (int)b.n; adds(&b, needle); out->needle[1] = (int)b.n; placed = 1; } while (0)
    for (int u = 0; u < units; u++) {
        /* passkey: between filler sentences; niah: after the sentence that ends at or past the depth */
        if (want && !placed && u == at_unit && (!s->niah || u == 0)) PLACE();
        else if (want && !placed && u >= at_unit) pending = 1;
        SEP();
        if (s->niah) {
            size_t w0, w1;
            next_word(s->text, tlen, &at, &w0, &w1);
            eval_sb_add(&b, s->text + w0, w1 - w0);
            if (pending && !placed && w1 > w0 && s->text[w1 - 1] == '.') PLACE();
        } else {
            adds(&b, FILLER[u % 5]);
        }
    }
    if (want && !placed) PLACE();
#undef PLACE
#undef SEP
    out->haystack[1] = (int)b.n;
    if (!s->question_first) {
        adds(&b, "\n\n");
        out->question[0] = (int)b.n;
        adds(&b, question);
        out->question[1] = (int)b.n;
    }
    if (b.oom || !b.s) {
        free(b.s);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->content = b.s;
    return 0;
}

void eval_passkey_free(eval_passkey_prompt *p)
{
    free(p->content);
    p->content = NULL;
}

int eval_passkey_correct(const char *output, const char *key)
{
    return output && key && key[0] && strstr(output, key) != NULL;
}
