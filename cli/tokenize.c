/* tokenize.c — `llm-run tokenize -m MODEL (-p TEXT | -f FILE | --stdin)`, with llama.cpp's
 * llama-tokenize habits: one "ID -> 'PIECE'" line per token by default, --ids prints only the
 * list [1, 2, 3], --show-count adds the total, --no-parse-special keeps "<|im_start|>" as text;
 * -f and --stdin take the bytes exactly as they are (a trailing newline is a token, no escapes:
 * llama-tokenize --no-escape); --chat/--system/--messages print the templated prompt's ids
 * (with the BOS the model adds, as llm-run would feed them). --json: one object. */
#include "cli/cli.h"
#include "eval/eval.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ids_only, show_count, use_stdin, no_bos;
} tok_opts;

#define T ((tok_opts *)ctx)
static int set_ids(void *ctx, const char *f, const char *v) { (void)f; (void)v; T->ids_only = 1; return 0; }
static int set_count(void *ctx, const char *f, const char *v) { (void)f; (void)v; T->show_count = 1; return 0; }
static int set_stdin(void *ctx, const char *f, const char *v) { (void)f; (void)v; T->use_stdin = 1; return 0; }
static int set_no_bos(void *ctx, const char *f, const char *v) { (void)f; (void)v; T->no_bos = 1; return 0; }
#undef T

static const cli_opt TOK_OPTS[] = {
    {"--ids", NULL, NULL, "print only the ids, as a list [1, 2, 3]", CLI_G_SUB, 1, set_ids},
    {"--show-count", NULL, NULL, "print the number of tokens", CLI_G_SUB, 1, set_count},
    {"--stdin", NULL, NULL, "read the text from standard input (bytes as they are)", CLI_G_SUB, 1, set_stdin},
    {"--no-bos", NULL, NULL, "no BOS in front, even when the model adds one", CLI_G_SUB, 0, set_no_bos},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const char SYNOPSIS[] =
    "-m MODEL (-p TEXT | -f FILE | --stdin) [--ids] [--show-count] [--no-parse-special] [--json]\n\n"
    "Prints the token ids of a text (llama-tokenize's output: \"ID -> 'PIECE'\" per token). The\n"
    "text of -f and --stdin is taken byte for byte (a trailing newline is a token). With --chat,\n"
    "--system or --messages FILE: the ids of the templated prompt llm-run would run. BOS is put\n"
    "in front when the model adds one (SmolLM2 and Qwen2 add none; LLaMA-2/3 do).";

int cli_tokenize_main(int argc, char **argv)
{
    run_options o;
    tok_opts t = {0};
    run_options_init(&o);
    int rc = cli_parse(argc, argv, 1, &o, TOK_OPTS, &t, "llm-run tokenize", SYNOPSIS);
    if (rc) return rc == 1 ? 0 : rc;
    if (o.n_positional) return cli_die("tokenize: unexpected argument '%s' (text with -p, -f FILE or --stdin)", o.positional[0]);
    if ((rc = run_options_finish(&o)) != 0) return rc;
    int sources = !!o.prompt_text + !!o.prompt_file + t.use_stdin + !!o.messages;
    if (sources != 1) return cli_die("tokenize: give the text with exactly one of -p, -f FILE, --stdin or --messages");

    char err[LLM_ERR_LEN] = "";
    char *text = NULL;
    size_t len = 0;
    int *ids = NULL, n = 0, status = 1;
    chat_message *msgs = NULL;
    int n_msgs = 0;
    eval_model *m = NULL;
    if (o.prompt_text) text = strdup(o.prompt_text), len = text ? strlen(text) : 0;
    else if (o.prompt_file || t.use_stdin) text = cli_read_file(t.use_stdin ? "-" : o.prompt_file, &len);
    if (!text && !o.messages) return 1;
    eval_model_opts mo = {.threads = 1, .dtype = -1, .resident = 0};
    if (!(m = eval_model_open(o.model_dir, &mo, err, sizeof err))) goto fail;
    if (o.messages && chat_messages_load(o.messages, &msgs, &n_msgs, err, sizeof err) != 0) goto fail;
    tokenizer *tok = eval_model_tokenizer(m);
    eval_prompt_in in = {.text = text, .text_len = len, .parse_special = !o.no_parse_special, .chat = o.chat,
                         .system = o.system, .messages = msgs, .n_messages = n_msgs, .chat_template = o.chat_template};
    if (!o.chat && !o.messages) {
        /* plain text: exactly the text's ids (BOS only when the model adds one) */
        unsigned fl = (o.no_parse_special ? 0 : TOK_PARSE_SPECIAL);
        if (tokenizer_kind(tok) == TOK_KIND_SPM && !o.no_parse_special) fl = 0;   /* SentencePiece: as before */
        int *p = NULL, k = 0;
        if (tokenizer_encode_ex(tok, text, len, fl, &p, &k, err, sizeof err) != 0) goto fail;
        int bos = !t.no_bos && eval_model_add_bos(m);
        if (!(ids = malloc(sizeof *ids * (size_t)(k + 1)))) {
            free(p);
            goto oom;
        }
        if (bos) ids[n++] = tokenizer_bos_id(tok) >= 0 ? tokenizer_bos_id(tok) : eval_model_bos(m);
        memcpy(ids + n, p, sizeof *p * (size_t)k);
        n += k;
        free(p);
    } else if (eval_encode(m, &in, &ids, &n, err, sizeof err) != 0) {
        goto fail;
    }
    if (o.json) {
        cJSON *j = cJSON_CreateObject(), *pieces = cJSON_CreateArray();
        cJSON_AddItemToObject(j, "ids", cJSON_CreateIntArray(ids, n));
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(pieces, cJSON_CreateString(tokenizer_piece(tok, ids[i])));
        cJSON_AddItemToObject(j, "pieces", pieces);
        cJSON_AddNumberToObject(j, "count", n);
        char *s = cJSON_PrintUnformatted(j);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else if (t.ids_only) {
        putchar('[');
        for (int i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        printf("]\n");
    } else {
        for (int i = 0; i < n; i++) {
            char *piece = NULL;
            size_t pl = 0;
            if (tokenizer_decode_ex(tok, ids + i, 1, TOK_DECODE_SPECIAL, &piece, &pl, err, sizeof err) != 0) goto fail;
            printf("%6d -> '", ids[i]);
            fwrite(piece, 1, pl, stdout);
            printf("'\n");
            free(piece);
        }
    }
    if (t.show_count) printf("Total number of tokens: %d\n", n);
    status = fflush(stdout) == 0 ? 0 : 1;
    if (status) cli_die("stdout: write failed");
    goto done;
oom:
    snprintf(err, sizeof err, "out of memory");
fail:
    fprintf(stderr, "llm-run: %s\n", err);
    status = 1;
done:
    free(ids);
    free(text);
    chat_messages_free(msgs, n_msgs);
    eval_model_free(m);
    return status;
}
