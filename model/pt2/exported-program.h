/* torch.export programs (.pt2) as a GraftModel.
 *
 * Two layouts are read, told apart by content:
 * - the PT2 archive torch.export.save writes since torch 2.8: one top
 *   folder with archive_format = "pt2", models/<name>.json, raw weight
 *   records data/weights/weight_<i> described by
 *   data/weights/<name>_weights_config.json (constants likewise);
 * - the flat layout of torch 2.1–2.7: serialized_exported_program.json at
 *   the zip root and the state dict as a nested torch.save zip
 *   (serialized_state_dict.pt).
 *
 * The program becomes the same IR as TorchScript: "torch.ops.aten.conv2d.default"
 * is a node aten::conv2d, "torch.ops.aten.add.Tensor" aten::add with a
 * string attribute "overload" = "Tensor" (the "default" overload is not
 * recorded);
 * constant arguments are attributes "arg<position>" (or their keyword),
 * tensor and symbolic arguments are inputs, as model/runtime expects of aten
 * nodes. Parameters, buffers and tensor constants are initializers (slices
 * of the mapped file, so their pages are read only when used); user inputs
 * are the graph inputs. Each node keeps its FX metadata (stack_trace,
 * nn_module_stack, torch_fn…) as node metadata and sits in the group of its
 * innermost nn_module_stack module. Symbolic dims keep torch's symbol
 * ("s77", "u0") and the model records range_constraints as dim ranges. */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include <json-glib/json-glib.h>
#include "pytorch/torch-archive.h"

G_BEGIN_DECLS

/* Major versions of torch.export's serialization schema Graft reads
 * (torch/_export/serde/schema.py SCHEMA_VERSION; torch 2.13 writes 8.20). */
#define GRAFT_EXPORTED_PROGRAM_SCHEMA_MAJOR 8

/* Records the reader keeps on the model for saving
 * (graft_model_get_kept_record): the program JSON without its graph's
 * nodes and values, and the example inputs as torch saved them. Extra
 * files are kept as "extra/<name>". */
#define GRAFT_EXPORTED_KEPT_PROGRAM "models/model.json"
#define GRAFT_EXPORTED_KEPT_SAMPLE_INPUTS "data/sample_inputs/model.pt"

/* Node metadata keys, as torch.export writes them. */
#define GRAFT_EXPORTED_STACK_TRACE_KEY "stack_trace"
#define GRAFT_EXPORTED_MODULE_STACK_KEY "nn_module_stack"

/* TRUE if the archive holds a torch.export program in either layout. */
gboolean graft_exported_program_recognize (GraftTorchArchive *archive);

GraftModel *graft_exported_program_load (GraftTorchArchive *archive, const char *path,
                                         GCancellable *cancellable, GError **error);

/* A program made in memory (the serialized ExportedProgram JSON, as
 * models/model.json holds it) as a GraftModel the writer saves: what
 * graft_exported_program_load() returns for a file holding it. tensors
 * gives the weights its input specs name (fqn → GraftTensor*, borrowed);
 * path names the model in messages. */
GraftModel *graft_exported_program_new_from_json (JsonObject *program, GHashTable *tensors, const char *path,
                                                  GError **error);

/* Normalises a torch.export symbol expression for display and lookup:
 * "Symbol('u1', integer=True)" → "u1"; anything else is returned as is. */
char *graft_exported_program_normalize_symbol (const char *expr);

G_END_DECLS
