/* Typed node attributes (ONNX AttributeProto, TorchScript constants folded
 * into their consumer). */
#pragma once

#include <glib.h>
#include "ir/tensor.h"

G_BEGIN_DECLS

typedef struct _GraftGraph GraftGraph;

typedef enum {
  GRAFT_ATTR_UNDEFINED = 0,
  GRAFT_ATTR_FLOAT,
  GRAFT_ATTR_INT,
  GRAFT_ATTR_STRING,
  GRAFT_ATTR_TENSOR,
  GRAFT_ATTR_GRAPH,
  GRAFT_ATTR_FLOATS,
  GRAFT_ATTR_INTS,
  GRAFT_ATTR_STRINGS,
  GRAFT_ATTR_TENSORS,
  GRAFT_ATTR_GRAPHS,
  GRAFT_ATTR_TYPE,         /* ONNX TypeProto, kept as its text form in .s */
  GRAFT_ATTR_TYPES,
  GRAFT_ATTR_SPARSE_TENSOR,/* kept as its dense values tensor in .t */
  /* TorchScript scalars that ONNX has no attribute type for */
  GRAFT_ATTR_BOOL,
  GRAFT_ATTR_NONE,
} GraftAttrType;

typedef struct {
  char *name;
  GraftAttrType type;
  char *doc_string;
  char *ref_attr_name;     /* ONNX function bodies: refers to a caller attribute */

  double f;                /* FLOAT */
  gint64 i;                /* INT, BOOL */
  GBytes *s;               /* STRING (may hold arbitrary bytes), TYPE */
  GraftTensor *t;          /* TENSOR, SPARSE_TENSOR */
  GraftGraph *g;           /* GRAPH, owned */
  GArray *floats;          /* double, FLOATS */
  GArray *ints;            /* gint64, INTS */
  GPtrArray *strings;      /* GBytes*, STRINGS, TYPES */
  GPtrArray *tensors;      /* GraftTensor*, TENSORS */
  GPtrArray *graphs;       /* GraftGraph*, GRAPHS, owned */
  /* TYPE, TYPES from ONNX: the TypeProtos as read, packed (GBytes*,
   * parallel to s / strings); the writer uses one while its text form is
   * still the attribute's, keeping the shapes and denotations the text
   * form leaves out. NULL when not read from ONNX. */
  GPtrArray *onnx_types;
} GraftAttribute;

GraftAttribute *graft_attribute_new (const char *name, GraftAttrType type);
void graft_attribute_free (GraftAttribute *attribute);

GraftAttribute *graft_attribute_new_int (const char *name, gint64 value);
GraftAttribute *graft_attribute_new_float (const char *name, double value);
GraftAttribute *graft_attribute_new_string (const char *name, const char *value);
GraftAttribute *graft_attribute_new_ints (const char *name, const gint64 *values, guint n);
GraftAttribute *graft_attribute_new_floats (const char *name, const double *values, guint n);
GraftAttribute *graft_attribute_new_tensor (const char *name, GraftTensor *tensor);
GraftAttribute *graft_attribute_new_graph (const char *name, GraftGraph *graph /* transfer full */);

/* NUL-terminated copy of .s (or NULL if not a string). */
char *graft_attribute_dup_string (const GraftAttribute *attribute);

/* Short display form: "3", "[1, 1]", "\"SAME_UPPER\"", "float32[64]",
 * "<graph then_branch: 3 nodes>". Long lists are elided with "…". */
char *graft_attribute_format_value (const GraftAttribute *attribute, guint max_items);

const char *graft_attr_type_to_string (GraftAttrType type);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftAttribute, graft_attribute_free)

G_END_DECLS
