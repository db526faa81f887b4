/* A loaded model: format, metadata, opsets, main graph, functions, and for
 * weight-only files (state_dict) a list of named tensors. */
#pragma once

#include <glib-object.h>
#include "ir/graph.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_MODEL_FORMAT_ONNX = 0,
  GRAFT_MODEL_FORMAT_TORCHSCRIPT,
  GRAFT_MODEL_FORMAT_STATE_DICT,   /* weights only, no graph */
  GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM, /* torch.export .pt2 */
  GRAFT_MODEL_FORMAT_EXECUTORCH,  /* ExecuTorch program .pte */
} GraftModelFormat;

const char *graft_model_format_to_string (GraftModelFormat format); /* "onnx", "torchscript", "state_dict" */

/* An ONNX local function (FunctionProto). */
typedef struct {
  char *name;
  char *domain;
  char *doc_string;
  GPtrArray *attribute_names;  /* char* */
  GraftGraph *body;            /* inputs/outputs are the formal parameters */
  GHashTable *opsets;          /* char* domain → gint64* version */
  GPtrArray *opset_order;      /* char* domains of opsets in file order; may be NULL */
  GBytes *onnx_kept_fields;    /* FunctionProto fields the IR has no place for (onnx/kept-fields.h) */
} GraftFunction;

void graft_function_free (GraftFunction *function);

#define GRAFT_TYPE_MODEL (graft_model_get_type ())
G_DECLARE_FINAL_TYPE (GraftModel, graft_model, GRAFT, MODEL, GObject)

GraftModel *graft_model_new (GraftModelFormat format);

GraftModelFormat graft_model_get_format (GraftModel *self);

/* The file it was read from (NULL for models built in memory). */
const char *graft_model_get_path (GraftModel *self);
void graft_model_set_path (GraftModel *self, const char *path);

const char *graft_model_get_producer_name (GraftModel *self);
const char *graft_model_get_producer_version (GraftModel *self);
void graft_model_set_producer (GraftModel *self, const char *name, const char *version);

const char *graft_model_get_domain (GraftModel *self);
void graft_model_set_domain (GraftModel *self, const char *domain);
gint64 graft_model_get_model_version (GraftModel *self);
void graft_model_set_model_version (GraftModel *self, gint64 version);
gint64 graft_model_get_ir_version (GraftModel *self);
void graft_model_set_ir_version (GraftModel *self, gint64 version);
const char *graft_model_get_doc_string (GraftModel *self);
void graft_model_set_doc_string (GraftModel *self, const char *doc);

/* Opset imports. domain is canonicalised ("" and "ai.onnx" → "onnx").
 * For TorchScript the file format version is stored as domain "torchscript". */
void graft_model_set_opset (GraftModel *self, const char *domain, gint64 version);
gint64 graft_model_get_opset (GraftModel *self, const char *domain); /* -1 if absent */
/* Sorted list of domains (char*, owned by the model) */
GPtrArray *graft_model_get_opset_domains (GraftModel *self);

/* Domains of the opset imports in the order they were set (file order
 * for a loaded model), interned, canonical; owned by the model. */
GPtrArray *graft_model_get_opset_order (GraftModel *self);
/* The opset imports as an a(sx) of (domain, version) in their order, for
 * graft_model_restore_opsets() to put back exactly (an undone edit drops
 * the domain it imported). */
GVariant *graft_model_save_opsets (GraftModel *self);
void graft_model_restore_opsets (GraftModel *self, GVariant *saved);

/* ModelProto fields the IR has no place for (training_info,
 * configuration...), packed (onnx/kept-fields.h); NULL when none. */
GBytes *graft_model_get_onnx_kept_fields (GraftModel *self);
void graft_model_set_onnx_kept_fields (GraftModel *self, GBytes *kept);

/* Records of the source file that the IR has no place for, kept whole
 * for its format's writer under their record names (a torch.export
 * program's "models/model.json", its "data/sample_inputs/model.pt");
 * NULL when absent. */
GBytes *graft_model_get_kept_record (GraftModel *self, const char *name);
void graft_model_set_kept_record (GraftModel *self, const char *name, GBytes *bytes);
/* Their names, sorted (owned by the caller, the strings by the model). */
GPtrArray *graft_model_list_kept_records (GraftModel *self);

/* metadata_props, in file order */
void graft_model_add_metadata (GraftModel *self, const char *key, const char *value);
guint graft_model_get_n_metadata (GraftModel *self);
void graft_model_get_metadata (GraftModel *self, guint index, const char **key, const char **value);

GraftGraph *graft_model_get_graph (GraftModel *self);
void graft_model_set_graph (GraftModel *self, GraftGraph *graph /* transfer full */);
/* The graph, which the model no longer holds (transfer full). */
GraftGraph *graft_model_steal_graph (GraftModel *self);

GPtrArray *graft_model_get_functions (GraftModel *self); /* GraftFunction*, owned */
void graft_model_add_function (GraftModel *self, GraftFunction *function /* transfer full */);
GraftFunction *graft_model_lookup_function (GraftModel *self, const char *domain, const char *name);

/* Named tensors of a weight-only file, or the parameters of a TorchScript module. */
GPtrArray *graft_model_get_tensors (GraftModel *self); /* GraftTensor*, owned */
void graft_model_add_tensor (GraftModel *self, GraftTensor *tensor /* transfer full */);

/* Value ranges of symbolic dims (torch.export range_constraints: "s77" ∈
 * [2, 16]). max < 0 means no upper bound. */
void graft_model_set_dim_range (GraftModel *self, const char *symbol, gint64 min, gint64 max);
gboolean graft_model_get_dim_range (GraftModel *self, const char *symbol, gint64 *min, gint64 *max);
void graft_model_remove_dim_range (GraftModel *self, const char *symbol);
/* "∈ [2, 16]", "≥ 2", or NULL when symbol has no range. */
char *graft_model_describe_dim_range (GraftModel *self, const char *symbol);
/* Symbols with a range, sorted (interned char*; free the array). */
GPtrArray *graft_model_list_dim_ranges (GraftModel *self);

/* Keeps an object alive as long as the model (the mapped file, the zip). */
void graft_model_keep_alive (GraftModel *self, gpointer data, GDestroyNotify destroy);

/* One-line description for title bars: "ONNX · opset 17 · pytorch 1.13.1". */
char *graft_model_describe (GraftModel *self);

G_END_DECLS
