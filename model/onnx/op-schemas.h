/* The ONNX operator schemas (inputs, outputs, attributes with their types
 * and defaults) of the pinned onnx package, made by
 * data/make-onnx-schemas.py and compiled in. The runtime registry knows
 * which ops Graft runs; this knows what each ONNX op takes. */
#pragma once

#include <glib.h>
#include "ir/attribute.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;          /* interned */
  GraftAttrType type;        /* UNDEFINED for types Graft does not name */
  gboolean required;
  const char *default_text;  /* "1", "[1, 1]", "NOTSET"; NULL when none can be shown */
} GraftOnnxAttributeSchema;

typedef struct {
  const char *domain;        /* canonical: "onnx", "ai.onnx.ml" */
  const char *op_type;       /* "Conv" */
  int since;                 /* the opset version it came in */
  gboolean deprecated;
  const char *inputs;        /* "X W B?": "?" optional, "..." variadic */
  const char *outputs;
  guint n_attributes;
  const GraftOnnxAttributeSchema *attributes;  /* sorted by name */
} GraftOnnxSchema;

/* The schema of domain::op_type in force at opset (the newest version not
 * after it); NULL when ONNX has no such op at that opset. */
const GraftOnnxSchema *graft_onnx_schema_lookup (const char *domain, const char *op_type, gint64 opset);
const GraftOnnxAttributeSchema *graft_onnx_schema_find_attribute (const GraftOnnxSchema *schema, const char *name);

G_END_DECLS
