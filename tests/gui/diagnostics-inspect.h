/* The Problems panel's rows as the tests read them: every listed row,
 * built or not (the list view builds only the visible ones), through the
 * panel's "model" property. */
#pragma once

#include <gtk/gtk.h>
#include "lint/diagnostics.h"

/* "severity rule node" of each listed row, "|"-separated. */
static inline char *
inspect_dup_diagnostics (gpointer panel)
{
  g_autoptr (GListModel) model = NULL;
  GString *summary = g_string_new (NULL);

  g_object_get (panel, "model", &model, NULL);
  g_assert_nonnull (model);
  for (guint i = 0; i < g_list_model_get_n_items (model); i++)
    {
      g_autoptr (GObject) item = g_list_model_get_item (model, i);
      const GraftDiagnostic *diagnostic = NULL;

      g_object_get (item, "diagnostic", &diagnostic, NULL);
      g_string_append_printf (summary, "%s%s %s %s", i > 0 ? "|" : "", graft_severity_to_string (diagnostic->severity),
                              diagnostic->rule, diagnostic->node_name != NULL ? diagnostic->node_name
                                                : diagnostic->value != NULL ? diagnostic->value->name : "-");
    }
  return g_string_free (summary, FALSE);
}
