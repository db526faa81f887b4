/* A torch.export program in Graft's IR → a PT2 archive (.pt2) that
 * torch.export.load reads: the layout torch 2.13's torch.export.save
 * writes (archive_format "pt2", archive_version 0, .data/version 6,
 * models/model.json, raw weight records described by
 * data/weights/model_weights_config.json, constants likewise, the example
 * inputs) with the schema version of the program as read.
 *
 * What the IR does not carry is taken from what the reader kept
 * (GraftNode.exported_json, GraftValue.exported_json and the model's kept
 * records): each node is written from its serialized form, with its
 * arguments, outputs, name and metadata taken from the IR, so argument
 * kinds (as_memory_format, as_device, as_graph…) survive; a value's
 * TensorMeta is the one read while the IR's dtype and shape still agree,
 * else it is written from the IR (contiguous strides; a symbolic dim
 * keeps its symbol, with the size it replaced as torch's hint); the
 * signature keeps the order and kinds read, following renames, with
 * graph inputs and outputs that edits added as user inputs/outputs at
 * the end; range_constraints are the model's dim ranges. Weights are
 * written contiguous, one record per tensor.
 *
 * Refused with a message naming the cause: a model that was not read from
 * a torch.export program, nodes an edit created (they have no serialized
 * form to follow), tensor subclasses and custom objects. */
#pragma once

#include <glib.h>
#include "ir/model.h"

G_BEGIN_DECLS

/* Writes model (format GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM) to path
 * atomically (ir/atomic-save.h); refuses to replace the file it was read
 * from unless overwrite_source. */
gboolean graft_exported_program_write_file (GraftModel *model, const char *path, gboolean overwrite_source,
                                            GError **error);

G_END_DECLS
