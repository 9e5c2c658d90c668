/* How far ahead of the lines it reads the second (code) pass of the x86
 * weight quantizers prefetches, shared by the avx2 and avx512 tiers
 * (quantize__<tier>.c). */
#ifndef QK_X86_QUANT_PREFETCH_H
#define QK_X86_QUANT_PREFETCH_H

#include "internal.h"

/* Floats ahead for inputs streaming from DRAM: 16-32 KiB and at least two
 * chunks of 64 values per group (the next chunk is already being loaded by
 * the first pass), spread over the code arithmetic. These keep more lines in
 * flight than prefetches issued in bursts with the first pass's loads, or
 * than a shorter distance: 1024x4096 from DRAM g32 w4s 34 -> 46-54 GB/s. */
#define QK_QPF_FAR(g) (64 * (g) < 4096 ? 4096 : 64 * (g) > 8192 ? 8192 : 64 * (g))

/* Inputs under QK_STREAM_MIN_BYTES (cache-resident) prefetch 16 KiB ahead
 * at g = 128 too: 32 KiB ahead pulls lines into the 48 KiB L1 that evict the
 * chunk pass 2 is about to read. A/B in one process (old and new builds
 * alternated, three runs each), 16x4096 from L2, avx512: g = 128 w4s, w4a,
 * w8s take 8-20% less time (6-14% in a busy hour); g = 256 was 0-4% slower at
 * 16 KiB, so it keeps 32. At g = 32..128, 8 KiB ahead was 2-30% slower and
 * 24 KiB (g = 32, 64) 8-17% slower than 16. The avx2 tier keeps QK_QPF_FAR:
 * the host was too busy to measure it there. */
static inline size_t qk_quant_pf_floats(const qk_qmat *out, size_t g) {
    return g <= 128 && out->rows * out->cols * sizeof(float) < QK_STREAM_MIN_BYTES ? 4096 : QK_QPF_FAR(g);
}

#endif
