/// The subcommands of qkbench. Each lives in its own file in bench/ and is
/// wired into the table in qkbench.c. argv[0] is the command's name.
/// Return 0 on success, 1 when the command ran but found a problem
/// (a regression, a failed check), 2 on a usage or input error.
#ifndef QK_COMMANDS_H
#define QK_COMMANDS_H

int qk_cmd_info(int argc, char **argv);
int qk_cmd_probe(int argc, char **argv);
int qk_cmd_bench(int argc, char **argv);
int qk_cmd_accuracy(int argc, char **argv);
int qk_cmd_sweep(int argc, char **argv);
int qk_cmd_depth(int argc, char **argv);
int qk_cmd_compare(int argc, char **argv);
int qk_cmd_report(int argc, char **argv);
int qk_cmd_fleet(int argc, char **argv);
/// The default run (qkbench with no command).
int qk_cmd_default(int argc, char **argv);

/// --isa TIER: lower the tier cap. Returns 0, or prints an error and returns 2.
int qk_cli_apply_isa(const char *value);
#endif
