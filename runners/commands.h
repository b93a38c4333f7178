/* The `agoq` subcommands; each parses its own getopt_long table and prints its own --help. */
#ifndef AGOQ_COMMANDS_H
#define AGOQ_COMMANDS_H
int cmd_list(int argc, char **argv);
int cmd_quant(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_collectives(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_bitalloc(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_step(int argc, char **argv);
#endif
