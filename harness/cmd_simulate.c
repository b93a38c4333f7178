/* agoq simulate: the step-time simulator at scale (experiment kind "simulate", runner in
 * sim/sim_experiment.c). Builds the same config object an experiment file gives:
 *   agoq simulate --machine experiments/machines/a6000-8x8-ib200.json --model llama2-13b \
 *                 --methods megatron,zero1,agoq --seq 32K,64K --tp 8 --pp 4 --gpus 64 --global-batch 16
 *   agoq simulate --mode comm --machine M.json --tp 8 --dp 8 -b 32K -e 1G -f 32
 * Output is always marked "simulated"; every calibration value's source is in meta.calibration. */
#include <stdio.h>
#include <string.h>

#include "harness/cmdline.h"
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"
#include "harness/qspec.h"

static void help(void) {
    printf("usage: agoq simulate [options]\n"
           "Predict step time, tokens/s and memory per GPU (mode step), or the gradient all-reduce\n"
           "alone (mode comm), from a machine file's calibration. Results are simulated, never measured.\n"
           "  --mode step|comm        (default step)\n"
           "  --machine F[,F...]      machine files (experiments/machines/*.json; required)\n"
           "  --model NAME[,NAME]     model cards (models/NAME.json; step)\n"
           "  --methods a,b           megatron, zero1, zero3, zeropp, coat, agoq, agoq_zero1 (step)\n"
           "  --seq N[,N]             sequence lengths, K suffix allowed (step)\n"
           "  --gpus N[,N]            GPU counts; dp = gpus / (tp*pp) (step; else --dp)\n"
           "  --tp N --pp N --dp N --vpp N   parallel layout (default 1)\n"
           "  --micro-batch N         sequences per micro-batch (default 1)\n"
           "  --global-batch N | --batch-per-replica N   sequences per step (fixed, or x dp)\n"
           "  --recompute N|auto      layers per stage recomputed (default auto: smallest that fits)\n"
           "  --no-overlap            DP communication not hidden under backward\n"
           "  --fused-quant           quantization fused into the GEMMs (no kernel time)\n"
           "  --accounting real|paper memory accounting of the memory model (default real)\n"
           "  --baseline METHOD       add speedup = baseline step time / ours\n"
           "  --algo ring|tree|auto   all-reduce algorithm (default auto)\n"
           "  --grad FMT[/BLOCK]      comm mode: quantized gradient wire format (default dyn8/256)\n"
           "comm mode sizes: -b -e -f over the fp32 gradient buffer (default 32K..1G, x32)\n" AGOQ_COMMON_HELP);
}

static int add_long(cJSON *cfg, const char *key, const char *flag, const char *v, long lo) {
    long x;
    if (cli_long_arg("simulate", flag, v, lo, 1L << 24, &x)) return -1;
    cJSON_AddNumberToObject(cfg, key, (double)x);
    return 0;
}

int cmd_simulate(int argc, char **argv) {
    enum { O_MODE = AGOQ_OPT_FIRST_PRIVATE, O_MACHINE, O_MODEL, O_METHODS, O_SEQ, O_GPUS, O_TP, O_PP, O_DP, O_VPP,
           O_MB, O_GB, O_BPR, O_RECOMP, O_NOOVL, O_FUSED, O_ACC, O_BASE, O_ALGO, O_GRAD };
    static const struct option longopts[] = {AGOQ_COMMON_LONGOPTS,
        {"mode", required_argument, 0, O_MODE}, {"machine", required_argument, 0, O_MACHINE},
        {"model", required_argument, 0, O_MODEL}, {"methods", required_argument, 0, O_METHODS},
        {"seq", required_argument, 0, O_SEQ}, {"gpus", required_argument, 0, O_GPUS},
        {"tp", required_argument, 0, O_TP}, {"pp", required_argument, 0, O_PP}, {"dp", required_argument, 0, O_DP},
        {"vpp", required_argument, 0, O_VPP}, {"micro-batch", required_argument, 0, O_MB},
        {"global-batch", required_argument, 0, O_GB}, {"batch-per-replica", required_argument, 0, O_BPR},
        {"recompute", required_argument, 0, O_RECOMP}, {"no-overlap", no_argument, 0, O_NOOVL},
        {"fused-quant", no_argument, 0, O_FUSED}, {"accounting", required_argument, 0, O_ACC},
        {"baseline", required_argument, 0, O_BASE}, {"algo", required_argument, 0, O_ALGO},
        {"grad", required_argument, 0, O_GRAD}, {0, 0, 0, 0}};
    agoq_common_opts o;
    agoq_common_init(&o, "simulate");
    cJSON *cfg = cJSON_CreateObject();
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, AGOQ_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
        int r = agoq_common_opt(&o, c, optarg);
        if (r < 0) bad = 2;
        if (r != 0) continue;
        cJSON *list;
        switch (c) {
        case O_MODE: cJSON_AddStringToObject(cfg, "mode", optarg); break;
        case O_MACHINE: cJSON_AddItemToObject(cfg, "machines", agoq_csv_strings(optarg)); break;
        case O_MODEL: cJSON_AddItemToObject(cfg, "models", agoq_csv_strings(optarg)); break;
        case O_METHODS: cJSON_AddItemToObject(cfg, "methods", agoq_csv_strings(optarg)); break;
        case O_SEQ:
        case O_GPUS:
            list = agoq_csv_numbers(optarg);
            if (!list) {
                agoq_error("simulate: bad value '%s' for --%s (expect e.g. 32K,64K)", optarg, c == O_SEQ ? "seq" : "gpus");
                bad = 2;
            } else {
                cJSON_AddItemToObject(cfg, c == O_SEQ ? "seqs" : "gpus", list);
            }
            break;
        case O_TP: bad = add_long(cfg, "tp", "--tp", optarg, 1) ? 2 : 0; break;
        case O_PP: bad = add_long(cfg, "pp", "--pp", optarg, 1) ? 2 : 0; break;
        case O_DP: bad = add_long(cfg, "dp", "--dp", optarg, 1) ? 2 : 0; break;
        case O_VPP: bad = add_long(cfg, "vpp", "--vpp", optarg, 1) ? 2 : 0; break;
        case O_MB: bad = add_long(cfg, "micro_batch", "--micro-batch", optarg, 1) ? 2 : 0; break;
        case O_GB: bad = add_long(cfg, "global_batch", "--global-batch", optarg, 1) ? 2 : 0; break;
        case O_BPR: bad = add_long(cfg, "batch_per_replica", "--batch-per-replica", optarg, 1) ? 2 : 0; break;
        case O_RECOMP:
            if (strcmp(optarg, "auto") == 0) cJSON_AddNumberToObject(cfg, "recompute", -1);
            else bad = add_long(cfg, "recompute", "--recompute", optarg, 0) ? 2 : 0;
            break;
        case O_NOOVL: cJSON_AddFalseToObject(cfg, "overlap"); break;
        case O_FUSED: cJSON_AddTrueToObject(cfg, "fused_quant"); break;
        case O_ACC: cJSON_AddStringToObject(cfg, "accounting", optarg); break;
        case O_BASE: cJSON_AddStringToObject(cfg, "baseline", optarg); break;
        case O_ALGO: cJSON_AddStringToObject(cfg, "algo", optarg); break;
        case O_GRAD: cJSON_AddStringToObject(cfg, "grad", optarg); break;
        default: bad = agoq_cmd_usage_error("simulate"); break;
        }
    }
    if (!bad && o.help) { help(); bad = -1; }
    if (!bad && optind < argc) {
        agoq_error("simulate: unexpected argument '%s'", argv[optind]);
        bad = 2;
    }
    if (bad) {
        cJSON_Delete(cfg);
        cJSON_Delete(o.sweep);
        return bad < 0 ? 0 : bad;
    }
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(cfg, "mode");
    int comm = cJSON_IsString(mode) && strcmp(mode->valuestring, "comm") == 0;
    if (!comm && !cJSON_GetObjectItemCaseSensitive(cfg, "global_batch") &&
        !cJSON_GetObjectItemCaseSensitive(cfg, "batch_per_replica"))
        cJSON_AddNumberToObject(cfg, "global_batch", 1);
    static const char *const step_tsv[] = {"machine", "model", "method", "variant", "gpus", "tp", "pp", "dp", "seq",
                                           "recompute", "fits", "step_ms", "tokens_per_s_per_gpu", "mem_GiB", "speedup"};
    static const char *const comm_tsv[] = {"machine", "bytes", "allreduce_ms", "a2a_ms", "quant_ms", "allgather_ms",
                                           "agoq_total_ms", "speedup"};
    return comm ? agoq_cmd_execute(&o, "simulate", cfg, comm_tsv, sizeof comm_tsv / sizeof comm_tsv[0], argc, argv)
                : agoq_cmd_execute(&o, "simulate", cfg, step_tsv, sizeof step_tsv / sizeof step_tsv[0], argc, argv);
}
