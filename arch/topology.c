/* Topology through hwloc. */
#include "topology.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>

static qk_topology topo;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

static int count_type(hwloc_topology_t t, hwloc_obj_type_t type) {
    int n = hwloc_get_nbobjs_by_type(t, type);
    return n < 0 ? 0 : n;
}

static void load(void) {
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) {
        snprintf(topo.error, sizeof topo.error, "hwloc could not load the topology");
        return;
    }
    topo.ok = 1;
    topo.packages = count_type(t, HWLOC_OBJ_PACKAGE);
    topo.cores = count_type(t, HWLOC_OBJ_CORE);
    topo.pus = count_type(t, HWLOC_OBJ_PU);
    topo.numa_nodes = count_type(t, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < topo.numa_nodes; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        if (o && o->attr) topo.numa_bytes += o->attr->numanode.local_memory;
    }
    static const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE};
    for (int l = 0; l < 4; l++) {
        int n = count_type(t, levels[l]);
        if (n == 0) continue;
        hwloc_obj_t o = hwloc_get_obj_by_type(t, levels[l], 0);
        qk_cache_level *c = &topo.cache[topo.ncache++];
        c->level = l + 1;
        c->count = n;
        c->size = o && o->attr ? o->attr->cache.size : 0;
        c->line = o && o->attr ? (int)o->attr->cache.linesize : 0;
        if (c->size) topo.cache_sizes_known = 1;
    }
    hwloc_topology_destroy(t);
}

const qk_topology *qk_topology_get(void) {
    pthread_once(&topo_once, load);
    return &topo;
}
