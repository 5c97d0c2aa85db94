/* chat_messages.c — the --messages FILE parser: a JSON array of {"role", "content"} objects (the
 * OpenAI chat messages shape). See tokenizer.h. */
#include "tokenizer/bpe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define set_err tok_set_err

void chat_messages_free(chat_message *msgs, int n) {
    if (!msgs) return;
    for (int i = 0; i < n; i++) {
        free((char *)msgs[i].role);
        free((char *)msgs[i].content);
    }
    free(msgs);
}

int chat_messages_parse(const char *json, size_t len, const char *name, chat_message **msgs,
                        int *n, char *err, size_t errlen) {
    if (msgs) *msgs = NULL;
    if (n) *n = 0;
    if (!name) name = "messages";
    if (!json || !msgs || !n) { set_err(err, errlen, "%s: NULL argument", name); return -1; }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        set_err(err, errlen, "%s: invalid JSON at byte %zu", name,
                end && end >= json ? (size_t)(end - json) : (size_t)0);
        return -1;
    }
    if (!cJSON_IsArray(root)) {
        set_err(err, errlen, "%s: expected a JSON array of messages [{\"role\": ..., "
                "\"content\": ...}, ...]", name);
        cJSON_Delete(root);
        return -1;
    }
    const int count = cJSON_GetArraySize(root);
    if (count == 0) {
        set_err(err, errlen, "%s: no messages", name);
        cJSON_Delete(root);
        return -1;
    }
    chat_message *out = calloc((size_t)count, sizeof *out);
    if (!out) {
        set_err(err, errlen, "%s: out of memory", name);
        cJSON_Delete(root);
        return -1;
    }
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        const char *problem = NULL;
        if (!cJSON_IsObject(e)) problem = "is not an object {\"role\": ..., \"content\": ...}";
        else if (!cJSON_IsString(role)) problem = "missing \"role\" (a string)";
        else if (!cJSON_IsString(content)) problem = "missing \"content\" (a string)";
        if (problem) {
            set_err(err, errlen, "%s: message %d %s", name, k + 1, problem);
            goto fail;
        }
        const char *r = role->valuestring;
        if (strcmp(r, "system") != 0 && strcmp(r, "user") != 0 && strcmp(r, "assistant") != 0) {
            set_err(err, errlen, "%s: message %d: unknown role \"%s\" (expected system, user or "
                    "assistant)", name, k + 1, r);
            goto fail;
        }
        out[k].role = strdup(r);
        out[k].content = strdup(content->valuestring);
        k++;
        if (!out[k - 1].role || !out[k - 1].content) {
            set_err(err, errlen, "%s: out of memory", name);
            goto fail;
        }
    }
    cJSON_Delete(root);
    *msgs = out;
    *n = k;
    return 0;
fail:
    chat_messages_free(out, k);
    cJSON_Delete(root);
    return -1;
}

int chat_messages_load(const char *path, chat_message **msgs, int *n, char *err,
                       size_t errlen) {
    if (msgs) *msgs = NULL;
    if (n) *n = 0;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        set_err(err, errlen, "%s: cannot open messages file (%s)", path ? path : "(null)",
                strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, r;
    do {
        if (len + 4096 > cap) {
            cap = (len + 4096) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); set_err(err, errlen, "%s: out of memory", path); return -1; }
            buf = nb;
        }
        r = fread(buf + len, 1, cap - len, f);
        len += r;
    } while (r > 0);
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        set_err(err, errlen, "%s: read error", path);
        return -1;
    }
    const int rc = chat_messages_parse(buf ? buf : "", len, path, msgs, n, err, errlen);
    free(buf);
    return rc;
}
