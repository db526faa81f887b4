/* What the graph canvas tells of a node, read as a user reads it: the
 * tooltip that shows with the pointer resting on the node's box (its op
 * and name, then its badge in full and what its tint means). The pointer
 * is moved through the canvas's own motion controller. */
#pragma once

#include <gtk/gtk.h>
#include "widgets/graph-canvas.h"

/* The pointer moved to (x, y) of canvas, as its motion controller hears it. */
static inline void
inspect_canvas_hover (GraftGraphCanvas *canvas, double x, double y)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (GTK_WIDGET (canvas));

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);

      if (GTK_IS_EVENT_CONTROLLER_MOTION (controller))
        {
          g_signal_emit_by_name (controller, "motion", x, y);
          return;
        }
    }
  g_error ("the canvas has no motion controller");
}

/* The lines of canvas's tooltip under node's op and name, with the
 * pointer on the middle of node's box: its badge and what its tint
 * means, in that order (empty: neither). A node that collapsed groups
 * hide is selected first, which opens them, as the Find panel does. */
static inline char **
inspect_canvas_node_marks (GraftGraphCanvas *canvas, GraftNode *node)
{
  g_autofree char *title = g_strdup_printf ("%s %s", node->op, node->name != NULL ? node->name : "");

  const char *text = NULL;

  for (int attempt = 0; attempt < 2; attempt++)
    {
      GraftRect box;
      double x, y;

      if (graft_graph_canvas_get_node_bounds (canvas, node, &box))
        {
          graft_graph_canvas_scene_to_screen (canvas, box.x + box.width / 2, box.y + box.height / 2, &x, &y);
          inspect_canvas_hover (canvas, x, y);
          text = gtk_widget_get_tooltip_text (GTK_WIDGET (canvas));
          g_auto(GStrv) lines = text != NULL ? g_strsplit (text, "\n", -1) : NULL;

          if (lines != NULL && g_strcmp0 (lines[0], title) == 0)
            return g_strdupv (lines + 1);
        }
      if (attempt == 0)
        {
          gboolean busy = TRUE;

          graft_graph_canvas_select_node (canvas, node);
          while (busy)
            {
              g_object_get (canvas, "busy", &busy, NULL);
              if (busy)
                g_main_context_iteration (NULL, TRUE);
            }
        }
    }
  g_error ("no tooltip names %s where the canvas draws its box (it says \"%s\")", title, text ? text : "nothing");
}

/* Whether canvas draws a box for node (its own, or a collapsed group's
 * hiding it): not for the nodes it lists at their readers instead. */
static inline gboolean
inspect_canvas_draws_node (GraftGraphCanvas *canvas, GraftNode *node)
{
  GraftRect box;

  return graft_graph_canvas_get_node_bounds (canvas, node, &box);
}

/* The first of lines that starts with prefix and ends with suffix, or NULL. */
static inline const char *
inspect_find_line (char **lines, const char *prefix, const char *suffix)
{
  for (guint i = 0; lines != NULL && lines[i] != NULL; i++)
    if (g_str_has_prefix (lines[i], prefix) && g_str_has_suffix (lines[i], suffix))
      return lines[i];
  return NULL;
}
