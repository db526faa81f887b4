/* JSON helpers and schema codes the torch.export reader and writer share. */
#pragma once

#include <json-glib/json-glib.h>
#include "ir/dtype.h"

G_BEGIN_DECLS

JsonObject *_graft_exported_member_object (JsonObject *object, const char *name);
JsonArray *_graft_exported_member_array (JsonObject *object, const char *name);
const char *_graft_exported_member_string (JsonObject *object, const char *name);
gboolean _graft_exported_member_int (JsonObject *object, const char *name, gint64 *value);

/* A TensorMeta on the CPU, strided, at offset 0 (takes sizes and strides). */
JsonNode *_graft_exported_tensor_meta (gint64 dtype_code, JsonArray *sizes, JsonNode *strides, gboolean requires_grad);
/* A pytree leaf, as torch serializes treespecs. */
JsonNode *_graft_exported_treespec_leaf (void);
/* A range_constraints entry; max < 0: unbounded (null). */
JsonNode *_graft_exported_range_node (gint64 min, gint64 max);

/* A schema union is an object with one member: its field name and value. */
const char *_graft_exported_union_field (JsonNode *node, JsonNode **value);

/* torch/_export/serde/schema.py ScalarType ↔ GraftDType; -1 for none. */
GraftDType _graft_exported_dtype_from_schema (gint64 code);
gint64 _graft_exported_dtype_to_schema (GraftDType dtype);
/* The schema's ScalarType ↔ c10::ScalarType, which aten kernels read. */
gint64 _graft_exported_c10_scalar_type_from_schema (gint64 code);
gint64 _graft_exported_c10_scalar_type_to_schema (gint64 c10);
/* "torch.ops.aten.conv2d.default" → ("aten", "conv2d", "default");
 * "_operator.ge" → ("_operator", "ge", NULL): a node's op is domain::op. */
void _graft_exported_split_target (const char *target, char **domain, char **op, char **overload);

G_END_DECLS
