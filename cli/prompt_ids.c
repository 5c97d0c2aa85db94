/* prompt_ids.c — `--prompt-ids` and `--force-ids`: token ids given on the command line ("1,2,3")
 * or in a file ("@FILE", a JSON array), fed to the model exactly as given (issue 14). */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int *cli_parse_prompt_ids(const char *flag, const char *arg, int vocab, int *n)
{
    char *text = NULL;
    cJSON *arr = NULL;
    int *ids = NULL;
    *n = 0;
    if (arg[0] == '@') {
        size_t len;
        if (!(text = cli_read_file(arg + 1, &len))) return NULL;
        arr = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsArray(arr)) {
            cli_die("%s %s: not a JSON array of token ids", flag, arg + 1);
            goto done;
        }
        int cnt = cJSON_GetArraySize(arr), k = 0;
        if (!(ids = malloc(sizeof *ids * (size_t)(cnt ? cnt : 1)))) goto oom;
        for (const cJSON *e = arr->child; e; e = e->next, k++) {
            double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (!(d >= 0 && d < vocab && d == floor(d))) {
                cli_die("%s %s: entry %d is not a token id in [0, %d)", flag, arg + 1, k, vocab);
                goto fail;
            }
            ids[k] = (int)d;
        }
        *n = cnt;
        if (cnt == 0) {
            cli_die("%s %s: no ids given", flag, arg + 1);
            goto fail;
        }
        goto done;
    }
    if (!(ids = malloc(sizeof *ids * (strlen(arg) / 2 + 1)))) goto oom;
    for (const char *p = arg; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v >= vocab || (*end && *end != ',')) {
            cli_die("%s: '%.*s' is not a token id in [0, %d)", flag, (int)strcspn(p, ","), p, vocab);
            goto fail;
        }
        ids[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        cli_die("%s: no ids given", flag);
        goto fail;
    }
    goto done;
oom:
    cli_die("out of memory");
fail:
    free(ids);
    ids = NULL;
    *n = 0;
done:
    cJSON_Delete(arr);
    free(text);
    return ids;
}
