#include "ir/module-dict.h"

#include <string.h>

gboolean
graft_module_dict_read (GraftNode *node, GraftModuleDict *dict)
{
  memset (dict, 0, sizeof *dict);
  if (node == NULL || strcmp (node->op, "prim::GetAttr") != 0)
    return FALSE;
  GraftAttribute *items = graft_node_get_attribute (node, "dict_items");
  GraftAttribute *keys = graft_node_get_attribute (node, "dict_keys");
  if (items != NULL && items->type == GRAFT_ATTR_STRINGS && items->strings->len % 2 == 0)
    {
      dict->strings = items->strings;
      dict->n_entries = items->strings->len / 2;
      return TRUE;
    }
  if (keys != NULL && keys->type == GRAFT_ATTR_STRINGS && keys->strings->len == node->inputs->len)
    {
      dict->strings = keys->strings;
      dict->values_are_inputs = TRUE;
      dict->n_entries = keys->strings->len;
      return TRUE;
    }
  return FALSE;
}

static char *
dup_string (GPtrArray *strings, guint index)
{
  gsize len = 0;
  const char *text = g_bytes_get_data (g_ptr_array_index (strings, index), &len);
  return g_strndup (text, len);
}

char *
graft_module_dict_dup_key (const GraftModuleDict *dict, guint entry)
{
  g_return_val_if_fail (entry < dict->n_entries, NULL);
  return dup_string (dict->strings, dict->values_are_inputs ? entry : 2 * entry);
}

char *
graft_module_dict_dup_string_value (const GraftModuleDict *dict, guint entry)
{
  g_return_val_if_fail (entry < dict->n_entries, NULL);
  return dict->values_are_inputs ? NULL : dup_string (dict->strings, 2 * entry + 1);
}
