#include "breadcrumbs.h"

#include "value-format.h"

struct _GraftBreadcrumbs
{
  GtkWidget parent_instance;

  GraftGraph *graph;
};

G_DEFINE_FINAL_TYPE (GraftBreadcrumbs, graft_breadcrumbs, GTK_TYPE_WIDGET)

enum {
  SIGNAL_GRAPH_ACTIVATED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
remove_children (GraftBreadcrumbs *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
}

static void
append_widget (GraftBreadcrumbs *self, GtkWidget *widget)
{
  gtk_widget_set_parent (widget, GTK_WIDGET (self));
}

static void
append_separator (GraftBreadcrumbs *self)
{
  GtkWidget *label = gtk_label_new ("›");

  gtk_widget_add_css_class (label, "dim-label");
  gtk_widget_set_parent (label, GTK_WIDGET (self));
}

static void
on_crumb_clicked (GtkButton *button, GraftBreadcrumbs *self)
{
  GraftGraph *graph = g_object_get_data (G_OBJECT (button), "graft-graph");

  g_signal_emit (self, signals[SIGNAL_GRAPH_ACTIVATED], 0, graph);
}

static void
on_sibling_selected (GtkDropDown *dropdown, GParamSpec *pspec, GraftBreadcrumbs *self)
{
  GPtrArray *siblings = g_object_get_data (G_OBJECT (dropdown), "graft-siblings");
  guint index = gtk_drop_down_get_selected (dropdown);

  if (siblings == NULL || index >= siblings->len || g_ptr_array_index (siblings, index) == self->graph)
    return;
  g_signal_emit (self, signals[SIGNAL_GRAPH_ACTIVATED], 0, g_ptr_array_index (siblings, index));
}

static GtkWidget *
make_graph_crumb (GraftBreadcrumbs *self, GraftGraph *graph, gboolean current)
{
  g_autofree char *name = graft_graph_format_name (graph);
  GtkWidget *widget;

  if (current && graph->parent_node != NULL)
    {
      GPtrArray *siblings = graft_node_get_subgraphs (graph->parent_node);

      if (siblings->len > 1)
        {
          GtkStringList *names = gtk_string_list_new (NULL);

          for (guint i = 0; i < siblings->len; i++)
            {
              g_autofree char *sibling_name = graft_graph_format_name (g_ptr_array_index (siblings, i));

              gtk_string_list_append (names, sibling_name);
            }
          widget = gtk_drop_down_new (G_LIST_MODEL (names), NULL);
          gtk_widget_set_tooltip_text (widget, "Switch to another body of this node");
          for (guint i = 0; i < siblings->len; i++)
            if (g_ptr_array_index (siblings, i) == graph)
              gtk_drop_down_set_selected (GTK_DROP_DOWN (widget), i);
          g_object_set_data_full (G_OBJECT (widget), "graft-siblings", siblings,
                                  (GDestroyNotify) g_ptr_array_unref);
          g_signal_connect (widget, "notify::selected", G_CALLBACK (on_sibling_selected), self);
          append_widget (self, widget);
          return widget;
        }
      g_ptr_array_unref (siblings);
    }

  if (current)
    {
      widget = gtk_label_new (name);
      gtk_widget_add_css_class (widget, "heading");
      gtk_label_set_ellipsize (GTK_LABEL (widget), PANGO_ELLIPSIZE_MIDDLE);
    }
  else
    {
      widget = gtk_button_new_with_label (name);
      gtk_widget_add_css_class (widget, "flat");
      g_object_set_data (G_OBJECT (widget), "graft-graph", graph);
      g_signal_connect (widget, "clicked", G_CALLBACK (on_crumb_clicked), self);
    }
  gtk_widget_set_tooltip_text (widget, name);
  append_widget (self, widget);
  return widget;
}

void
graft_breadcrumbs_set_graph (GraftBreadcrumbs *self, GraftGraph *graph)
{
  g_autoptr(GPtrArray) chain = NULL;

  g_return_if_fail (GRAFT_IS_BREADCRUMBS (self));

  remove_children (self);
  self->graph = graph;
  if (graph == NULL)
    return;

  chain = graft_graph_get_ancestry (graph);
  for (guint i = 0; i < chain->len; i++)
    {
      GraftGraph *level = g_ptr_array_index (chain, i);

      if (level->parent_node != NULL)
        {
          g_autofree char *node_label = graft_node_format_label (level->parent_node);
          GtkWidget *label = gtk_label_new (node_label);

          append_separator (self);
          gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_MIDDLE);
          gtk_label_set_max_width_chars (GTK_LABEL (label), 32);
          gtk_widget_set_tooltip_text (label, node_label);
          append_widget (self, label);
          append_separator (self);
        }
      make_graph_crumb (self, level, i + 1 == chain->len);
    }
}

static void
graft_breadcrumbs_dispose (GObject *object)
{
  GraftBreadcrumbs *self = GRAFT_BREADCRUMBS (object);

  remove_children (self);
  G_OBJECT_CLASS (graft_breadcrumbs_parent_class)->dispose (object);
}

static void
graft_breadcrumbs_class_init (GraftBreadcrumbsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_breadcrumbs_dispose;

  signals[SIGNAL_GRAPH_ACTIVATED] =
    g_signal_new ("graph-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BOX_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "breadcrumbs");
}

static void
graft_breadcrumbs_init (GraftBreadcrumbs *self)
{
  GtkLayoutManager *layout = gtk_widget_get_layout_manager (GTK_WIDGET (self));

  gtk_box_layout_set_spacing (GTK_BOX_LAYOUT (layout), 4);
}
