/// Is this process running on an emulated CPU (qemu-user, valgrind, ...)? Then its
/// timings are the emulator's, not this CPU's, and every place that shows a timing
/// says so (machine.json, every row, the printed table, summary.md, info, probe).
///
/// Detection compares what the process sees of its CPU with what the kernel says
/// about the machine in /proc/cpuinfo (which an emulator passes through from the host):
///  - arch: the binary runs as aarch64 but /proc/cpuinfo describes a non-Arm CPU (no
///    "CPU implementer"/"Features", or x86's "vendor_id"/"flags"), or the reverse;
///  - x86 vendor: CPUID's vendor differs from /proc/cpuinfo's vendor_id (qemu -cpu Nehalem
///    on an AMD host);
///  - x86 features: /proc/cpuinfo's flags (on every processor) list an ISA feature that
///    CPUID lacks (qemu -cpu max on an AVX-512 host). Only this direction: natively the
///    kernel's flags are a subset of CPUID (it clears features the OS does not enable);
///  - Arm features: HWCAP and /proc/cpuinfo's Features disagree on asimd, asimddp or
///    i8mm (natively the kernel prints exactly the HWCAP bits).
/// Not used: the brand string. Natively on a VM the hypervisor may give CPUID one brand
/// and the kernel's "model name" another (this machine: "Oxide Virtual Turin-like
/// Processor" against "AMD EPYC"). A VM is not emulation: its timings are the CPU's.
/// QK_EMULATED=1 or 0 in the environment overrides the detection; any other value is
/// a usage error (qkbench exits 2).
#ifndef QKB_EMULATION_H
#define QKB_EMULATION_H

/// The line shown wherever timings appear when the CPU is emulated.
#define QKB_EMULATED_LINE "EMULATED: timings are not this CPU's"

typedef struct qkb_emulation {
    int emulated;     ///< 1: timings are an emulator's
    int detected;     ///< what detection alone says (before QK_EMULATED)
    const char *method; ///< "arch", "vendor", "features", "none", "unknown" (no /proc/cpuinfo), or "env"
    char how[320];    ///< one sentence: what was compared and what differed
} qkb_emulation;

/// Detected once (thread-safe).
const qkb_emulation *qkb_emulation_get(void);
/// "QK_EMULATED=x: expected 1 or 0" when the variable has another value; else NULL.
const char *qkb_emulation_env_error(void);
#endif
