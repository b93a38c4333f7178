/* The runner-descriptor command line: one parser and one --help printer over each runner's
 * flags table, the shared flags, and the results path rule; see cmdline.h. */
#include "runners/cmdline.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "kernels/quant/qspec.h"
#include "runners/experiment.h"

/* The shared flags: their getopt values are their short letters (or AGOQ_OPT_BACKEND/SEED/CHECK). */
static const agoq_flag g_common[] = {
    {.name = "backend", .arg = "cpu|cuda|auto", .help = "where to run (default auto: cuda if a GPU is usable)"},
    {.name = "out", .short_opt = 'o', .arg = "FILE",
     .help = "results JSON (written atomically; default results/<machine>/<cmd>.json)"},
    {.name = "seed", .arg = "N", .help = "seed of every random input (default 1)"},
    {.name = "check", .help = "validate the configuration only: run nothing, write nothing"},
    {.name = "minbytes", .short_opt = 'b', .arg = "SIZE", .help = "smallest size in bytes (K, M, G suffixes)"},
    {.name = "maxbytes", .short_opt = 'e', .arg = "SIZE", .help = "largest size in bytes"},
    {.name = "stepfactor", .short_opt = 'f', .arg = "FACTOR", .help = "size step factor (default 2)"},
    {.name = "iters", .short_opt = 'n', .arg = "N", .help = "timed iterations"},
    {.name = "warmup_iters", .short_opt = 'w', .arg = "N", .help = "warm-up iterations"},
    {.name = "quiet", .short_opt = 'q', .help = "no progress on stderr"},
    {.name = "help", .short_opt = 'h', .help = "this text"},
};
#define NCOMMON (sizeof g_common / sizeof g_common[0])
#define MAX_FLAGS 64

static int common_val(const agoq_flag *f) {
    if (f->short_opt) return f->short_opt;
    return strcmp(f->name, "backend") == 0 ? AGOQ_OPT_BACKEND : strcmp(f->name, "check") == 0 ? AGOQ_OPT_CHECK : AGOQ_OPT_SEED;
}

const struct option *agoq_common_longopts(size_t *count) {
    static struct option lo[NCOMMON];
    for (size_t i = 0; i < NCOMMON; i++)
        lo[i] = (struct option){g_common[i].name, g_common[i].arg ? required_argument : no_argument, 0,
                                common_val(&g_common[i])};
    *count = NCOMMON;
    return lo;
}

void agoq_common_init(agoq_common_opts *o, const char *cmd) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->backend = "auto";
    o->seed = 1;
    o->sweep = cJSON_CreateObject();
    optind = 0; /* glibc: 0 re-initializes getopt fully (1 keeps a half-read "-abc" cluster) */
}

int agoq_common_opt(agoq_common_opts *o, int c, const char *arg) {
    char flag[8] = {'-', (char)c, 0};
    size_t sz;
    long l;
    double d;
    switch (c) {
    case AGOQ_OPT_BACKEND: o->backend = arg; return 1;
    case AGOQ_OPT_SEED:
        if (cli_parse_u64(arg, &o->seed) != 0) {
            agoq_error("%s: bad value '%s' for --seed", o->cmd, arg);
            return -1;
        }
        return 1;
    case AGOQ_OPT_CHECK: o->check = 1; return 1;
    case 'o': o->out = arg; return 1;
    case 'q': o->quiet = 1; return 1;
    case 'h': o->help = 1; return 1;
    case 'b':
    case 'e':
        if (cli_size_arg(o->cmd, flag, arg, &sz)) return -1;
        cJSON_AddNumberToObject(o->sweep, c == 'b' ? "min_bytes" : "max_bytes", (double)sz);
        return 1;
    case 'f':
        if (cli_double_arg(o->cmd, flag, arg, &d)) return -1;
        cJSON_AddNumberToObject(o->sweep, "factor", d);
        return 1;
    case 'n':
    case 'w':
        if (cli_long_arg(o->cmd, flag, arg, c == 'n' ? 1 : 0, 1000000, &l)) return -1;
        cJSON_AddNumberToObject(o->sweep, c == 'n' ? "iters" : "warmup", (double)l);
        return 1;
    default: return 0;
    }
}

void agoq_common_apply_sweep(const agoq_common_opts *o, cJSON *config) {
    const cJSON *e;
    cJSON_ArrayForEach(e, o->sweep) {
        cJSON_DeleteItemFromObjectCaseSensitive(config, e->string);
        cJSON_AddItemToObject(config, e->string, cJSON_Duplicate(e, 1));
    }
}

int agoq_cmd_usage_error(const char *cmd) {
    fprintf(stderr, "agoq %s: try 'agoq %s --help'\n", cmd, cmd);
    return 2;
}

/* ---- the results path rule ------------------------------------------------------------------ */

const char *agoq_results_default_out(const agoq_runner *r, agoq_backend b, const char *name, char *buf, size_t len) {
    char machine[64] = "cpu";
    agoq_gpu_info g;
    if (!(r && r->host_only) && b != AGOQ_BACKEND_CPU && agoq_gpu_query(0, &g) == 0) {
        const char *s = g.name;
        if (strncmp(s, "NVIDIA ", 7) == 0) s += 7;
        size_t k = 0;
        for (; *s && k + 1 < sizeof machine; s++)
            machine[k++] = *s == ' ' ? '-' : (char)tolower((unsigned char)*s);
        machine[k] = '\0';
        if (!k) snprintf(machine, sizeof machine, "gpu");
    }
    snprintf(buf, len, "results/%s/%s.json", machine, name);
    return buf;
}

/* ---- parsing -------------------------------------------------------------------------------- */

static size_t nflags(const agoq_runner *r) {
    size_t n = 0;
    while (r->flags && (r->flags[n].name || r->flags[n].short_opt)) n++;
    return n;
}

static int takes_arg(const agoq_flag *f) { return f->kind != AGOQ_FLAG_SET && (f->kind != AGOQ_FLAG_CALL || f->arg); }

/* A repeated flag replaces its earlier value; "obj.member" sets a member of object obj. */
static void set_key(cJSON *cfg, const char *key, cJSON *item) {
    const char *dot = strchr(key, '.');
    if (dot) {
        char obj[64];
        snprintf(obj, sizeof obj, "%.*s", (int)(dot - key), key);
        cJSON *o = cJSON_GetObjectItemCaseSensitive(cfg, obj);
        if (!cJSON_IsObject(o)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cfg, obj);
            o = cJSON_AddObjectToObject(cfg, obj);
        }
        cfg = o;
        key = dot + 1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, key);
    cJSON_AddItemToObject(cfg, key, item);
}

static int apply_flag(cJSON *cfg, const agoq_flag *f, const char *arg, const char *cmd) {
    char flag[80];
    if (f->name) snprintf(flag, sizeof flag, "--%s", f->name);
    else snprintf(flag, sizeof flag, "-%c", f->short_opt);
    cJSON *item = NULL;
    long l;
    double d;
    switch (f->kind) {
    case AGOQ_FLAG_STR: item = cJSON_CreateString(arg); break;
    case AGOQ_FLAG_STRS: item = agoq_csv_strings(arg); break;
    case AGOQ_FLAG_NUMS:
        if (!(item = agoq_csv_numbers(arg))) {
            if (f->value) agoq_error("%s: bad value '%s' for %s (expect e.g. %s)", cmd, arg, flag, f->value);
            else agoq_error("%s: bad value '%s' for %s", cmd, arg, flag);
            return -1;
        }
        break;
    case AGOQ_FLAG_LONG:
        if (cli_long_arg(cmd, flag, arg, f->lo, f->hi, &l)) return -1;
        item = cJSON_CreateNumber((double)l);
        break;
    case AGOQ_FLAG_NUM:
        if (cli_double_arg(cmd, flag, arg, &d)) return -1;
        item = cJSON_CreateNumber(d);
        break;
    case AGOQ_FLAG_SET: item = cJSON_Parse(f->value); break;
    case AGOQ_FLAG_CALL: return f->parse(cfg, f, arg, cmd);
    }
    set_key(cfg, f->key, item);
    return 0;
}

static const agoq_flag *find_flag(const agoq_runner *r, int c) {
    size_t n = nflags(r);
    if (c >= AGOQ_OPT_FIRST_PRIVATE && (size_t)(c - AGOQ_OPT_FIRST_PRIVATE) < n) return &r->flags[c - AGOQ_OPT_FIRST_PRIVATE];
    for (size_t i = 0; i < n; i++)
        if (r->flags[i].short_opt && r->flags[i].short_opt == c) return &r->flags[i];
    return NULL;
}

int agoq_runner_main(const agoq_runner *r, int argc, char **argv) {
    struct option lo[NCOMMON + MAX_FLAGS + 1];
    char shortopts[64 + 2 * MAX_FLAGS] = AGOQ_COMMON_SHORTOPTS;
    size_t nc, n = nflags(r), k = 0;
    const struct option *common = agoq_common_longopts(&nc);
    for (size_t i = 0; i < nc; i++) lo[k++] = common[i];
    for (size_t i = 0; i < n && i < MAX_FLAGS; i++) {
        const agoq_flag *f = &r->flags[i];
        int val = f->short_opt ? f->short_opt : AGOQ_OPT_FIRST_PRIVATE + (int)i;
        if (f->name) lo[k++] = (struct option){f->name, takes_arg(f) ? required_argument : no_argument, 0, val};
        if (f->short_opt && !strchr(AGOQ_COMMON_SHORTOPTS, f->short_opt)) {
            size_t l = strlen(shortopts);
            shortopts[l] = (char)f->short_opt;
            shortopts[l + 1] = takes_arg(f) ? ':' : '\0';
            shortopts[l + 2] = '\0';
        }
    }
    lo[k] = (struct option){0, 0, 0, 0};
    agoq_cmd cmd = {r, {0}, cJSON_CreateObject(), r->tsv, r->ntsv, argc, argv};
    agoq_common_init(&cmd.o, r->kind);
    if (r->backend) cmd.o.backend = r->backend;
    int c, rc = -1;
    while (rc < 0 && (c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
        const agoq_flag *f = find_flag(r, c);
        if (f) {
            if (apply_flag(cmd.cfg, f, optarg, r->kind)) rc = 2;
            continue;
        }
        int s = agoq_common_opt(&cmd.o, c, optarg);
        if (s < 0) rc = 2;
        else if (s == 0) rc = agoq_cmd_usage_error(r->kind);
    }
    if (rc < 0 && cmd.o.help) {
        agoq_runner_help(r);
        rc = 0;
    }
    if (rc < 0 && optind < argc) {
        agoq_error("%s: unexpected argument '%s'", r->kind, argv[optind]);
        rc = 2;
    }
    if (rc < 0 && r->finish) rc = r->finish(&cmd);
    if (rc < 0) return r->execute ? r->execute(&cmd) : agoq_cmd_execute(&cmd);
    cJSON_Delete(cmd.cfg);
    cJSON_Delete(cmd.o.sweep);
    return rc;
}

int agoq_cmd_execute(agoq_cmd *cmd) {
    agoq_common_opts *o = &cmd->o;
    agoq_common_apply_sweep(o, cmd->cfg);
    agoq_run_ctx ctx = {{"command line", "config"}, AGOQ_BACKEND_CPU, o->seed, o->quiet, o->check, 0};
    char defout[512]; /* the path rule's results/<machine>/<cmd>.json; -o is used as given */
    int rc = -1;
    if (agoq_backend_resolve(o->backend, &ctx.backend) == 0) {
        const char *out = o->out ? o->out : agoq_results_default_out(cmd->r, ctx.backend, o->cmd, defout, sizeof defout);
        rc = agoq_experiment_execute(cmd->r->kind, &ctx, cmd->cfg, out, cmd->tsv, cmd->ntsv, cmd->argc, cmd->argv);
    }
    cJSON_Delete(cmd->cfg);
    cJSON_Delete(o->sweep);
    cmd->cfg = o->sweep = NULL;
    return rc == 0 ? 0 : 1;
}

/* ---- --help, printed from the tables -------------------------------------------------------- */

static void help_line(const agoq_flag *f) {
    char label[96] = "", *p = label;
    size_t left = sizeof label;
    int w = 0;
    if (f->short_opt) w = snprintf(p, left, "-%c%s", f->short_opt, f->name ? ", " : "");
    if (f->name) w += snprintf(p + w, left - (size_t)w, "--%s", f->name);
    if (f->arg) snprintf(p + w, left - (size_t)w, " %s", f->arg);
    if (strlen(label) <= 22) printf("  %-22s ", label);
    else printf("  %s\n%25s", label, "");
    for (const char *s = f->help; *s; s++) {
        putchar(*s);
        if (*s == '\n') printf("%25s", "");
    }
    if (f->choices) printf(": %s", f->choices());
    putchar('\n');
}

void agoq_runner_help(const agoq_runner *r) {
    size_t n = nflags(r);
    printf("usage: agoq %s %s\n%s\n", r->kind, r->usage ? r->usage : "[options]", r->about);
    for (size_t i = 0; i < n; i++)
        if (r->flags[i].help) help_line(&r->flags[i]);
    if (r->notes) printf("%s\n", r->notes);
    if (r->keys) {
        printf("config keys (experiment files, kind \"%s\"):", r->kind);
        size_t col = 96, first = 1; /* the list starts on its own line */
        for (int list = 0; list < 2; list++)
            for (const char *const *k = list ? r->more_keys : r->keys; k && *k; k++) {
                int dup = 0;
                for (const char *const *j = r->keys; list && *j && !dup; j++) dup = strcmp(*j, *k) == 0;
                if (dup) continue;
                printf("%s", first ? "" : ",");
                if (col + strlen(*k) + 2 > 96) {
                    printf("\n ");
                    col = 1;
                }
                printf(" %s", *k);
                col += strlen(*k) + 2;
                first = 0;
            }
        putchar('\n');
    }
    printf("common options:\n");
    for (size_t i = 0; i < NCOMMON; i++)
        if (!g_common[i].short_opt || !find_flag(r, g_common[i].short_opt)) help_line(&g_common[i]);
}
