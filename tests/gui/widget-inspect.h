/* What the GUI tests read and set of a widget, through GTK's own API
 * rather than functions of the product's: a child of the widget's
 * template, by its id in the .ui file (what the user sees and types in). */
#pragma once

#include <gtk/gtk.h>

/* widget's template child called name, declared by type (a class of
 * widget's, or widget's own); aborts the test if there is none. */
static inline gpointer
inspect_template_child (gpointer widget, GType type, const char *name)
{
  GObject *child = gtk_widget_get_template_child (GTK_WIDGET (widget), type, name);

  g_assert_nonnull (child);
  return child;
}

/* The text of widget's template label called name. */
static inline const char *
inspect_label_text (gpointer widget, GType type, const char *name)
{
  return gtk_label_get_text (GTK_LABEL (inspect_template_child (widget, type, name)));
}

/* Types text into widget's template entry (or entry row) called name. */
static inline void
inspect_set_text (gpointer widget, GType type, const char *name, const char *text)
{
  gtk_editable_set_text (GTK_EDITABLE (inspect_template_child (widget, type, name)), text);
}

/* object's unsigned or boolean property called name. */
static inline guint
inspect_uint (gpointer object, const char *name)
{
  guint value = 0;

  g_object_get (object, name, &value, NULL);
  return value;
}

static inline gboolean
inspect_boolean (gpointer object, const char *name)
{
  gboolean value = FALSE;

  g_object_get (object, name, &value, NULL);
  return value;
}

/* The breadcrumbs' crumbs joined with " › ", as the user reads them: each
 * crumb's whole name (its tooltip; the "›" between have none), and the
 * body chosen in a crumb that switches between sibling bodies. */
static inline char *
inspect_dup_breadcrumbs (gpointer breadcrumbs)
{
  GString *text = g_string_new (NULL);

  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (breadcrumbs)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      const char *crumb = gtk_widget_get_tooltip_text (child);

      if (GTK_IS_DROP_DOWN (child))
        crumb = gtk_string_object_get_string (gtk_drop_down_get_selected_item (GTK_DROP_DOWN (child)));
      if (crumb != NULL)
        g_string_append_printf (text, "%s%s", text->len > 0 ? " › " : "", crumb);
    }
  return g_string_free (text, FALSE);
}

static inline void
inspect_append_labels (GtkWidget *widget, GString *text)
{
  if (GTK_IS_LABEL (widget))
    g_string_append_printf (text, "%s%s", text->len > 0 && text->str[text->len - 1] != '|' ? " " : "",
                            gtk_label_get_text (GTK_LABEL (widget)));
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL; child = gtk_widget_get_next_sibling (child))
    inspect_append_labels (child, text);
}

/* The rows of list (a GtkListBox) as the user reads them: each row's
 * labels in order, joined with " ", the rows with "|" (the Run pane's
 * outputs: "name dtype[shape] min= max= mean="). Not the placeholder
 * shown while there are none. */
static inline char *
inspect_dup_rows (gpointer list)
{
  GString *text = g_string_new (NULL);
  gboolean first = TRUE;

  for (GtkWidget *row = gtk_widget_get_first_child (GTK_WIDGET (list)); row != NULL; row = gtk_widget_get_next_sibling (row))
    {
      if (!GTK_IS_LIST_BOX_ROW (row))
        continue;
      if (!first)
        g_string_append_c (text, '|');
      first = FALSE;
      inspect_append_labels (row, text);
    }
  return g_string_free (text, FALSE);
}
