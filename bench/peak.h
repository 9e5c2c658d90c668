/// The measurement loops behind `qkbench probe`: f32 FMA peak, int8 dot peak,
/// a streaming read and a streaming write, one file per ISA tier (peak_<tier>.c, compiled with
/// that tier's flags only), plain C for the scalar tier (peak.c).
///
/// Every loop keeps its accumulators in registers, hides its operands from
/// the optimizer with empty asm barriers (so nothing is hoisted or folded), and
/// returns a value computed from all accumulators.
#ifndef QKB_PEAK_H
#define QKB_PEAK_H
#include <stddef.h>
#include <stdint.h>

#include "qk/qk.h"

/// Runs `iters` iterations; returns the operations performed (an FMA lane is
/// 2 flops, an int8 multiply-accumulate 2 ops) and stores a result in *sink.
typedef double (*qkb_peak_fn)(uint64_t iters, volatile double *sink);
/// Reads bytes [0, bytes) of buf once (bytes a multiple of 512, buf 64-byte
/// aligned); returns a checksum.
typedef uint64_t (*qkb_read_fn)(const void *buf, size_t bytes);
/// Writes over bytes [0, bytes) of buf once (the same alignment), as the tier's
/// kernels write large outputs: non-temporal stores on x86 (no read for
/// ownership, the lines go to DRAM; no fence: the caller issues one after its
/// last call), plain stores on Arm and in plain C. What it
/// writes is QKB_WRITE_PATTERN in every word it stores, plus one for each pass of
/// its loop (256 bytes on avx512, 128 on avx2, 64 on NEON and in plain C), never
/// a line of zeros: on the current host a stream storing zero lines ran up to
/// 1.49x the read beside the same calls (as if the host compressed them), a
/// rate no kernel's output gets.
typedef void (*qkb_write_fn)(void *buf, size_t bytes);
#define QKB_WRITE_PATTERN 0x3fc00000 /* 1.5f, a float like the outputs */

typedef struct qkb_peak_tier {
    qk_tier tier;
    qkb_peak_fn f32;  ///< f32 multiply-add (scalar: a multiply and an add)
    qkb_peak_fn i8;   ///< int8 dot (u8·s8 pairs into int32; scalar: int multiply-add)
    qkb_peak_fn i8g32; ///< the same dot with W8A8's per-group rescale at g = 32 (NULL: none)
    const char *f32_insn, *i8_insn; ///< what the loops execute
    qkb_read_fn read; ///< NULL: use a lower tier's
    qkb_write_fn write; ///< NULL: use a lower tier's
} qkb_peak_tier;

/// Every tier this build compiled, lowest first (scalar is always there).
extern const qkb_peak_tier qkb_peak_tiers[];
extern const size_t qkb_peak_tier_count;

#define QKB_PEAK_DECL(tier)                                          \
    double qkb_peak_f32__##tier(uint64_t iters, volatile double *sink); \
    double qkb_peak_i8__##tier(uint64_t iters, volatile double *sink);  \
    double qkb_peak_i8g32__##tier(uint64_t iters, volatile double *sink); \
    uint64_t qkb_read__##tier(const void *buf, size_t bytes);          \
    void qkb_write__##tier(void *buf, size_t bytes);
QKB_PEAK_DECL(scalar)
QKB_PEAK_DECL(avx2)
QKB_PEAK_DECL(avxvnni)
QKB_PEAK_DECL(avx512)
QKB_PEAK_DECL(avx512vnni)
QKB_PEAK_DECL(neon)
QKB_PEAK_DECL(neondot)
QKB_PEAK_DECL(neoni8mm)
#undef QKB_PEAK_DECL
#endif
