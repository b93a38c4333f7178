/* Fuzz target: the command-line parsers. The input is NUL- or newline-separated arguments;
 * the first picks the subcommand by name (or, if it is none, by its first byte). "--check" is
 * always passed first, so a valid command line is validated and nothing runs or is written. */
#include "fuzz/fuzz.h"
#include "harness/commands.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
} cmds[] = {{"quant", cmd_quant},     {"run", cmd_run},           {"kernels", cmd_kernels},
            {"collectives", cmd_collectives}, {"memory", cmd_memory}, {"bitalloc", cmd_bitalloc},
            {"simulate", cmd_simulate}, {"train", cmd_train}};
#define NCMD (sizeof cmds / sizeof cmds[0])
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
    size_t c = NCMD;
    for (size_t i = 0; i < NCMD; i++)
        if (argc && strcmp(words[0], cmds[i].name) == 0) c = i;
    if (c == NCMD) c = (argc && words[0][0] ? (unsigned char)words[0][0] : 0) % NCMD;
    int n = 0;
    argv[n++] = (char *)cmds[c].name;
    argv[n++] = "--check";
    for (int i = 1; i < argc; i++) argv[n++] = words[i];
    argv[n] = NULL;
    cmds[c].fn(n, argv);
    free(buf);
    return 0;
}
