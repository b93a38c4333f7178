/* The `agoq` subcommands that are not experiment kinds; every kind is an agoq_runner
 * (runners/experiment.h) run by agoq_runner_main. */
#ifndef AGOQ_COMMANDS_H
#define AGOQ_COMMANDS_H
int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);
#endif
