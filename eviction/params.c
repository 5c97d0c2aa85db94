/* Policy parameters: flags, generic aliases and JSON presets (POLICIES.md §16). */
#include "eviction/eviction.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *lookup_origin;   /* set by lookup: where the value came from */

static const char *lookup(const policy_params *p, const char *name)
{
    for (int i = p->n_set - 1; i >= 0; i--)
        if (strcmp(p->set[i].name, name) == 0) {
            lookup_origin = p->set[i].origin;
            return p->set[i].value;
        }
    return NULL;
}

/* Control characters of a value (a preset string or a flag with "\n" in it) become '?', so the
 * error stays one line. Returns -1. */
static int one_line(char *err, size_t errlen)
{
    for (char *c = err; err && errlen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return -1;
}

/* Prefixes an error about a preset value with the preset's path; keeps it one line. */
static void name_origin(char *err, size_t errlen)
{
    if (lookup_origin) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "%s: %s", lookup_origin, tmp);
    }
    one_line(err, errlen);
}

int policy_param_int(const policy_params *p, const char *name, int def, int lo, int hi, int *out,
                     char *err, size_t errlen)
{
    const char *v = lookup(p, name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end) {
        snprintf(err, errlen, "--%s: not an integer: '%s'", name, v);
        name_origin(err, errlen);
        return -1;
    }
    if (x < lo || x > hi) {
        snprintf(err, errlen, "--%s: %ld is out of range [%d, %d]", name, x, lo, hi);
        name_origin(err, errlen);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int policy_param_float(const policy_params *p, const char *name, double def, double lo, double hi,
                       double *out, char *err, size_t errlen)
{
    const char *v = lookup(p, name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || isnan(x)) {
        snprintf(err, errlen, "--%s: not a number: '%s'", name, v);
        name_origin(err, errlen);
        return -1;
    }
    if (x < lo || x > hi) {
        snprintf(err, errlen, "--%s: %g is out of range [%g, %g]", name, x, lo, hi);
        name_origin(err, errlen);
        return -1;
    }
    *out = x;
    return 0;
}

int policy_param_enum(const policy_params *p, const char *name, const char *choices, int def,
                      int *out, char *err, size_t errlen)
{
    const char *v = lookup(p, name);
    if (!v) {
        *out = def;
        return 0;
    }
    int idx = 0;
    size_t n = strlen(v);
    for (const char *c = choices; *c; idx++) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, v, n) == 0) {
            *out = idx;
            return 0;
        }
        c += len + (bar ? 1 : 0);
    }
    snprintf(err, errlen, "--%s: expected one of %s, got '%s'", name, choices, v);
    name_origin(err, errlen);
    return -1;
}

int policy_params_set(policy_params *p, const policy_ops *ops, const char *name,
                      const char *value, char *err, size_t errlen)
{
    const char *resolved = NULL;
    for (const policy_param_def *d = ops->param_defs; d && d->name; d++)
        if (strcmp(d->name, name) == 0 || (d->generic && strcmp(d->generic, name) == 0)) {
            resolved = d->name;
            break;
        }
    if (!resolved) {
        snprintf(err, errlen, "--%s: policy %s has no such parameter (see --list-policies)", name,
                 ops->name);
        return one_line(err, errlen);
    }
    if (p->n_set >= POLICY_MAX_SET || strlen(value) >= sizeof p->set[0].value) {
        snprintf(err, errlen, "--%s: too many parameters or value too long", name);
        return one_line(err, errlen);
    }
    snprintf(p->set[p->n_set].name, sizeof p->set[0].name, "%s", resolved);
    snprintf(p->set[p->n_set].value, sizeof p->set[0].value, "%s", value);
    p->set[p->n_set].origin = NULL;
    p->n_set++;
    return 0;
}

int policy_preset_load(const char *path, const policy_ops **ops, policy_params *p, char *err,
                       size_t errlen)
{
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {   /* a FIFO would block fopen */
        snprintf(err, errlen, "%s: policy preset is not a regular file", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open policy preset: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "%s: cannot read policy preset (too large or unreadable)", path);
        return -1;
    }
    int rc = policy_preset_parse(buf, (size_t)n, path, ops, p, err, errlen);
    free(buf);
    return rc;
}

int policy_preset_parse(const char *text, size_t len, const char *path, const policy_ops **ops,
                        policy_params *p, char *err, size_t errlen)
{
    const char *endp = text;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &endp, 0);
    while (root && endp < text + len && (*endp == ' ' || *endp == '\t' || *endp == '\r' || *endp == '\n'))
        endp++;
    int rc = -1;
    if (!root || endp != text + len || !cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: malformed JSON policy preset (expected an object)", path);
        goto out;
    }
    cJSON *pol = cJSON_GetObjectItemCaseSensitive(root, "policy");
    if (pol) {
        if (!cJSON_IsString(pol) || !policy_find(pol->valuestring)) {
            snprintf(err, errlen, "%s: \"policy\": unknown policy %s", path,
                     cJSON_IsString(pol) ? pol->valuestring : "(not a string)");
            goto out;
        }
        *ops = policy_find(pol->valuestring);
    }
    if (!*ops) {
        snprintf(err, errlen, "%s: no \"policy\" given", path);
        goto out;
    }
    for (cJSON *it = root->child; it; it = it->next) {
        char val[64];
        if (cJSON_IsNumber(it)) snprintf(val, sizeof val, "%.17g", it->valuedouble);
        else if (cJSON_IsString(it) && strlen(it->valuestring) < sizeof val)
            snprintf(val, sizeof val, "%s", it->valuestring);
        else if (strcmp(it->string, "comment") == 0 || strcmp(it->string, "source") == 0) continue;
        else {
            snprintf(err, errlen, "%s: \"%s\": expected a number or a short string", path, it->string);
            goto out;
        }
        if (strcmp(it->string, "policy") == 0) continue;
        if (strcmp(it->string, "comment") == 0 || strcmp(it->string, "source") == 0) continue;
        if (strcmp(it->string, "budget") == 0) {
            char *e;
            double b = strtod(val, &e);
            if (*e || !(b > 0) || isinf(b)) {
                snprintf(err, errlen, "%s: \"budget\": must be a number > 0, got %s", path, val);
                goto out;
            }
            p->budget = b;
        } else if (strcmp(it->string, "budget-ref") == 0) {
            if (strcmp(val, "prompt") && strcmp(val, "total")) {
                snprintf(err, errlen, "%s: \"budget-ref\": expected total or prompt", path);
                goto out;
            }
            p->budget_ref_prompt = strcmp(val, "prompt") == 0;
        } else if (strcmp(it->string, "rope") == 0) {
            if (strcmp(val, "absolute") && strcmp(val, "shifted")) {
                snprintf(err, errlen, "%s: \"rope\": expected absolute or shifted", path);
                goto out;
            }
            p->rope_shifted = strcmp(val, "shifted") == 0;
        } else if (strcmp(it->string, "seed") == 0) {
            p->seed = (uint64_t)strtoull(val, NULL, 10);
        } else {
            char e2[256];
            if (policy_params_set(p, *ops, it->string, val, e2, sizeof e2) != 0) {
                snprintf(err, errlen, "%s: %s", path, e2);
                goto out;
            }
            p->set[p->n_set - 1].origin = path;
        }
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc ? one_line(err, errlen) : 0;
}
