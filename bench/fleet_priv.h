/* What the fleet scan keeps besides fleet.h's groups (fleet_scan.c, fleet_collect.c). */
#ifndef QKB_FLEET_PRIV_H
#define QKB_FLEET_PRIV_H
#include <stddef.h>

#include "json.h"
#include "probe.h"

/* Probe limits of the shards of one machine must agree within these (relative):
 * one-thread read bandwidths and peaks, all-core ones (other load on a node
 * moves those most). */
#define QKF_TOL_1T 0.15
#define QKF_TOL_ALL 0.25

/* One shard folder as read from its shard.json and machine.json. */
typedef struct qkf_attempt {
    char dir[1024];
    char command[16], run_id[72], sha[24], status[16], host[256], machine[96], commit[64], started[40], finished[40];
    char sl_job[32], sl_array[32], sl_task[32], sl_node[128];
    char cpu[80];
    int shard, of;
    size_t total;
    char **args;
    int nargs;
    char **cases;
    size_t *pos;
    size_t ncases, ndone;
    qkj *probe_root; /* machine.json */
    qkb_limits limits;
    int has_limits;
    int chosen;
} qkf_attempt;

typedef struct qkf_manifest {
    char name[72], path[1100];
    int shards;
    char **cmd;
    int ncmd;
    char **targets;
    int ntargets;
    struct {
        char id[32];
        int target;
    } *jobs;
    int njobs;
} qkf_manifest;

/* A task's "qkbench-fleet:" lines in its Slurm log. */
typedef struct qkf_logent {
    char run[72], target[128], job[64], node[128], start[40];
    int shard, of, exit, ended;
} qkf_logent;

typedef struct qkf_priv {
    qkf_attempt *att;
    size_t natt;
    qkf_manifest *man;
    size_t nman;
    qkf_logent *log;
    size_t nlog;
} qkf_priv;

char *qkf_strdup(const char *s);
#endif
