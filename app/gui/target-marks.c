/* Partitions as tints, reasons as badges (target-marks.h). */
#include "target-marks.h"

#include <string.h>

/* Partition colours: distinct hues, light enough under dark label text. */
static const GdkRGBA partition_tints[] = {
  { 0.21, 0.52, 0.89, 1 }, { 0.57, 0.25, 0.67, 1 }, { 0.15, 0.64, 0.41, 1 }, { 0.90, 0.65, 0.04, 1 },
  { 0.00, 0.60, 0.65, 1 }, { 0.75, 0.38, 0.16, 1 }, { 0.88, 0.36, 0.62, 1 }, { 0.45, 0.45, 0.45, 1 },
};

void
graft_target_marks_tint_partitions (GraftGraphCanvas *canvas, const GraftTargetReport *report)
{
  for (guint i = 0; i < report->partitions->len; i++)
    {
      GraftPartition *partition = g_ptr_array_index (report->partitions, i);
      g_autofree char *note = g_strdup_printf ("Runs on %s (partition %u of %u)", report->target->name, i + 1,
                                               report->partitions->len);

      for (guint k = 0; k < partition->nodes->len; k++)
        graft_graph_canvas_set_node_tint (canvas, g_ptr_array_index (partition->nodes, k),
                                          &partition_tints[i % G_N_ELEMENTS (partition_tints)], note);
    }
}

const char *
graft_target_marks_badge (const char *reason)
{
  static const struct { const char *reason, *badge; } badges[] = {
    { "op", "no such op" }, { "opset", "opset" }, { "dtype", "dtype" }, { "attribute", "attribute" },
    { "dynamic-shape", "dynamic shape" }, { "rank", "rank" }, { "constant-input", "computed weight" },
    { "output", "output" }, { "inputs", "inputs" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (badges); i++)
    if (strcmp (badges[i].reason, reason) == 0)
      return badges[i].badge;
  return reason;
}
