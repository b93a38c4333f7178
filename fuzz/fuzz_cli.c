/* Fuzz target: the command-line parsers. The input is NUL- or newline-separated arguments;
 * the first picks the subcommand by name (an experiment kind or "run"; if it is none, by its
 * first byte). "--check" is always passed first, so a valid command line is validated and
 * nothing runs or is written. Every kind goes through the one parser (runners/cmdline.c). */
#include "fuzz/fuzz.h"
#include "runners/commands.h"
#include "runners/experiment.h"

#define MAXARG 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1), *argv[MAXARG + 3];
    memcpy(buf, data, size);
    buf[size] = '\0';
    int argc = 0;
    char *words[MAXARG];
    for (char *p = buf, *start = buf; p <= buf + size && argc < MAXARG; p++)
        if (p == buf + size || *p == '\0' || *p == '\n') {
            *p = '\0';
            words[argc++] = start;
            start = p + 1;
        }
    int nk;
    const agoq_runner *const *k = agoq_runners(&nk);
    const int ncmd = nk + 1; /* the kinds, then "run" */
    int c = ncmd;
    for (int i = 0; i < ncmd; i++)
        if (argc && strcmp(words[0], i < nk ? k[i]->kind : "run") == 0) c = i;
    if (c == ncmd) c = (argc && words[0][0] ? (unsigned char)words[0][0] : 0) % ncmd;
    int n = 0;
    argv[n++] = (char *)(c < nk ? k[c]->kind : "run");
    argv[n++] = "--check";
    for (int i = 1; i < argc; i++) argv[n++] = words[i];
    argv[n] = NULL;
    if (c < nk) agoq_runner_main(k[c], n, argv);
    else cmd_run(n, argv);
    free(buf);
    return 0;
}
