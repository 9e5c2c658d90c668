/* qkbench sweep: every format x group size x tier for one shape (DESIGN §4).
 * Being written with the accuracy issue (issue 6); not wired into qkbench yet. */
#include "commands.h"

int qk_cmd_sweep(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return 2;
}
