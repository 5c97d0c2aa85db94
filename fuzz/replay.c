/* Corpus replay: feeds every file named on the command line (directories: every regular file
 * in them, in name order) to the target's LLVMFuzzerTestOneInput, each in a malloc'd buffer of
 * exactly its size. Built with the normal compiler (and with SANITIZE=1) by `make check` as
 * build/fuzz/replay_NAME; tests/test_fuzz_corpus.sh runs it on fuzz/corpus/NAME. A broken
 * contract aborts (non-zero exit, the reason on stderr); otherwise prints
 * "replay: N inputs ok" and exits 0. */
#include "fuzz/fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0, r;
    uint8_t *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += r) == cap) buf = realloc(buf, cap *= 2);
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    uint8_t *exact = malloc(n ? n : 1);   /* exactly n bytes: overreads hit the redzone */
    memcpy(exact, buf, n);
    free(buf);
    if (getenv("REPLAY_VERBOSE")) fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: not found\n", argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]) != 0;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "replay: %s: cannot open\n", argv[i]);
            bad++;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (n + 1) * sizeof *names);
            names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
            sprintf(names[n], "%s/%s", argv[i], e->d_name);
            n++;
        }
        closedir(d);
        qsort(names, n, sizeof *names, cmp);
        for (size_t k = 0; k < n; k++) {
            if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
                bad += run_file(names[k]) != 0;
                count++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replay: %d inputs ok%s\n", count - bad, bad ? " (some could not be read)" : "");
    return bad ? 1 : 0;
}
