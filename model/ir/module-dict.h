/* A module's dict attribute as the TorchScript reader leaves it on the
 * prim::GetAttr that reads it: a dict of strings
 * (IntermediateLayerGetter.return_layers) as "dict_items", keys and values
 * alternating; a Dict[str, Tensor] that torch.jit.save kept filled
 * (LeViT's attention_bias_cache) as "dict_keys", its tensors the node's
 * inputs in the same order. The runtime, the lowering to ONNX and the
 * converter to torch.export all read it through this one decoder. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct
{
  /* GBytes: keys and string values alternating, or keys only */
  GPtrArray *strings;
  /* TRUE when entry i's value is the node's input i */
  gboolean values_are_inputs;
  guint n_entries;
} GraftModuleDict;

/* Fills dict from node when node reads a module dict attribute in either
 * form, with its parts consistent (FALSE otherwise). dict points into node. */
gboolean graft_module_dict_read (GraftNode *node, GraftModuleDict *dict);

/* Entry i's key. */
char *graft_module_dict_dup_key (const GraftModuleDict *dict, guint entry);

/* Entry i's value when the values are strings; NULL when they are inputs. */
char *graft_module_dict_dup_string_value (const GraftModuleDict *dict, guint entry);

G_END_DECLS
