/* chat.c — prompt templates. See tokenizer.h for the exact formats. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Llama-2 chat as in Meta's llama/generation.py (B_INST "[INST]", E_INST "[/INST]",
 * B_SYS "<<SYS>>\n", E_SYS "\n<</SYS>>\n\n"): one user turn, no BOS, nothing trimmed. */
char *chat_format_llama2(const char *system, const char *user) {
    if (!user) return NULL;
    if (system && system[0] == '\0') system = NULL;
    size_t len = strlen("[INST] ") + strlen(user) + strlen(" [/INST]") + 1;
    if (system) len += strlen("<<SYS>>\n") + strlen(system) + strlen("\n<</SYS>>\n\n");
    char *out = malloc(len);
    if (!out) return NULL;
    if (system) snprintf(out, len, "[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", system, user);
    else snprintf(out, len, "[INST] %s [/INST]", user);
    return out;
}
