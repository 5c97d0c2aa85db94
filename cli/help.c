/* help.c — the help texts of the option table (grouped --help, --help-all), --list-policies,
 * and the did-you-mean suggestion for unknown flags (split out of options.c). */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const char *GROUP_NAMES[CLI_G_COUNT] = {"model and prompt", "generation", "KV cache", "output", "other", "this command",
                                               "llama.cpp's flags (what they do here)"};

static void print_opts(FILE *f, const cli_opt *t, int group, int all)
{
    for (; t && t->name; t++) {
        if (t->group != group || (!all && !t->common)) continue;
        char left[64];
        snprintf(left, sizeof left, "%s%s%s%s%s", t->alias ? t->alias : "", t->alias ? ", " : "    ",
                 t->name, t->arg ? " " : "", t->arg ? t->arg : "");
        const char *h = t->help;
        const char *nl = strchr(h, '\n');
        if (strlen(left) > 27) fprintf(f, "  %s\n  %-27s ", left, "");
        else fprintf(f, "  %-27s ", left);
        if (!all && nl) { fprintf(f, "%.*s\n", (int)(nl - h), h); continue; }
        for (const char *p = h; *p; p++) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "  %-27s ", "");
        }
        fputc('\n', f);
    }
}

void cli_print_help(FILE *f, const char *prog, const char *synopsis, const cli_opt *extra, int all)
{
    fprintf(f, "usage: %s %s\n\n", prog, synopsis);
    for (int g = 0; g < CLI_G_COUNT; g++) {
        int any = 0;
        for (int k = 0; cli_shared_tables[k]; k++)
            for (const cli_opt *t = cli_shared_tables[k]; t->name; t++) any |= t->group == g && (all || t->common);
        for (const cli_opt *t = extra; t && t->name; t++) any |= t->group == g && (all || t->common);
        if (!any) continue;
        fprintf(f, "%s:\n", GROUP_NAMES[g]);
        print_opts(f, extra, g, all);
        for (int k = 0; cli_shared_tables[k]; k++) print_opts(f, cli_shared_tables[k], g, all);
    }
    if (!all)
        fprintf(f, "  %-27s %s\n", "    --help-all", "every option (policy parameters: --list-policies)");
}

/* Edit distance (Damerau-less Levenshtein), capped. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

const char *cli_suggest(const char *flag, const cli_opt *extra)
{
    const char *best = NULL;
    int bd = 3;   /* at most 2 edits */
    const cli_opt *tables[4] = {cli_run_options, cli_llama_options, cli_sampling_options, extra};
    for (int k = 0; k < 4; k++)
        for (const cli_opt *t = tables[k]; t && t->name; t++) {
            int d = edit_distance(flag, t->name);
            if (d < bd) bd = d, best = t->name;
        }
    for (const policy_ops *const *p = policy_all(); *p; p++)
        for (const policy_param_def *d = (*p)->param_defs; d && d->name; d++) {
            char nm[96];
            snprintf(nm, sizeof nm, "--%s", d->name);
            int e = edit_distance(flag, nm);
            if (e < bd) bd = e, best = d->name;   /* returned without "--": callers add it */
        }
    static const char *more[] = {"--help", "--help-all", "--version", "--list-policies"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        int d = edit_distance(flag, more[i]);
        if (d < bd) bd = d, best = more[i];
    }
    return best;
}

void cli_list_policies(void)
{
    const policy_ops *const *all = policy_all();
    for (int i = 0; all[i]; i++) {
        printf("%-14s %s\n", all[i]->name, all[i]->paper);
        if (all[i]->params && *all[i]->params) printf("%14s %s\n", "", all[i]->params);
        for (const policy_param_def *d = all[i]->param_defs; d && d->name; d++) {
            char flag[128];
            snprintf(flag, sizeof flag, "--%s%s%s%s", d->name, d->generic ? " (--" : "",
                     d->generic ? d->generic : "", d->generic ? ")" : "");
            printf("%14s   %-34s %s (default %s%s%s)\n", "", flag, d->help ? d->help : "",
                   d->def ? d->def : "-", d->choices ? "; one of " : "", d->choices ? d->choices : "");
        }
    }
}
