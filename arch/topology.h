/// Machine topology from hwloc (DESIGN §3): packages, cores, PUs, NUMA nodes
/// and cache sizes per level. Sizes are what hwloc reports; in VMs they can be
/// wrong, which is why `qkbench probe` measures the levels instead.
#ifndef QK_TOPOLOGY_H
#define QK_TOPOLOGY_H
#include <stddef.h>
#include <stdint.h>

#define QK_TOPO_MAX_CACHE 5

typedef struct qk_cache_level {
    int level;          ///< 1, 2, 3 (L1 is the data cache)
    uint64_t size;      ///< bytes per instance (0 if hwloc gave none)
    int count;          ///< instances
    int line;           ///< line size in bytes (0 if unknown)
} qk_cache_level;

typedef struct qk_topology {
    int ok;             ///< 0 if hwloc could not load a topology
    int packages, cores, pus, numa_nodes;
    uint64_t numa_bytes; ///< total memory of the NUMA nodes
    int ncache;
    qk_cache_level cache[QK_TOPO_MAX_CACHE];
    int cache_sizes_known; ///< 0 if hwloc reported no cache sizes at all
    char error[128];
} qk_topology;

/// Query hwloc once.
const qk_topology *qk_topology_get(void);
#endif
