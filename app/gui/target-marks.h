/* A deployment target's verdicts drawn on a graph canvas, the same way in
 * the main window and the compare window: each partition's nodes tinted
 * in its own colour, a rejected node badged with why. */
#pragma once

#include "widgets/graph-canvas.h"
#include "lint/target-check.h"

G_BEGIN_DECLS

/* Tints the nodes of every partition of report, the tooltip saying
 * "Runs on ort-nnapi (partition 1 of 2)". */
void graft_target_marks_tint_partitions (GraftGraphCanvas *canvas, const GraftTargetReport *report);
/* The badge of a rejected node: "no such op", "dynamic shape"…, for
 * graft_support_reason_to_string()'s reason. */
const char *graft_target_marks_badge (const char *reason);

G_END_DECLS
