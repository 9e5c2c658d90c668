/// machine.json (DESIGN §6): the CPU and its features (and whether the OS
/// enabled them), the hwloc topology, how the build was compiled, the probe's
/// limits, and the kernel the dispatcher chooses for every op and mode.
#ifndef QKB_MACHINE_H
#define QKB_MACHINE_H
#include <stddef.h>

#include "json.h"
#include "probe.h"

/// The whole machine.json object.
void qkb_machine_json(qkw *w, const qkb_limits *l);
/// Write machine.json to path atomically. 0 on success; else a message in err.
int qkb_machine_write(const char *path, const qkb_limits *l, char *err, size_t errlen);
#endif
