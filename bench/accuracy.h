/// The accuracy summary of qkbench's default run (DESIGN §6, issue 6 item 7).
#ifndef QK_ACCURACY_H
#define QK_ACCURACY_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A quick accuracy pass on generated Gaussian data (shape 4x1024x4096, every
/// format, g = 32 and 128, every mode, every tier this CPU allows): writes
/// accuracy.csv and accuracy.json into dir (if not NULL) and a Markdown
/// section (quantization error per format/g/mode, worst kernel-error ratio
/// over the tiers) into md (if not NULL). Returns 0, 1 if a kernel is outside
/// its error model, 2 on an error (message on stderr).
int qk_accuracy_summary(const char *dir, FILE *md);

#ifdef __cplusplus
}
#endif
#endif
