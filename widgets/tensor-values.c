#include "tensor-values.h"

#include <math.h>
#include <string.h>

#define VECTOR_COLUMNS 8
/* Rows of the table visible before it scrolls. */
#define TABLE_MAX_HEIGHT 240

static char *
format_count (gint64 n)
{
  g_autofree char *digits = g_strdup_printf ("%" G_GINT64_FORMAT, n);
  GString *out = g_string_new (NULL);
  gsize len = strlen (digits);

  for (gsize i = 0; i < len; i++)
    {
      if (i > 0 && (len - i) % 3 == 0)
        g_string_append_c (out, ',');
      g_string_append_c (out, digits[i]);
    }
  return g_string_free (out, FALSE);
}

char *
graft_tensor_values_preview (GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  gint64 shown = MIN (numel, GRAFT_TENSOR_PREVIEW_ELEMENTS);
  GString *out = g_string_new (NULL);

  if (numel == 0)
    return g_string_free (out, FALSE);
  for (gint64 i = 0; i < shown; i++)
    {
      g_autofree char *text = graft_tensor_format_element (tensor, i);

      g_string_append_printf (out, "%s%s", i > 0 ? ", " : "", text != NULL ? text : "?");
    }
  if (shown < numel)
    {
      g_autofree char *total = format_count (numel);

      g_string_append_printf (out, ", … (first %" G_GINT64_FORMAT " of %s)", shown, total);
    }
  return g_string_free (out, FALSE);
}

static GtkWidget *
cell_label (const char *text, gboolean header)
{
  GtkWidget *label = gtk_label_new (text);

  gtk_label_set_xalign (GTK_LABEL (label), 1);
  gtk_widget_add_css_class (label, "monospace");
  if (header)
    gtk_widget_add_css_class (label, "dim-label");
  return label;
}

/* "[2,0]" for the row of a [3,4,5] tensor holding elements (2,0,*). */
static char *
row_index (const GraftTensor *tensor, gint64 row, gint64 columns)
{
  GString *out = g_string_new ("[");
  gint64 rest = row;
  int leading = tensor->rank - 1;
  g_autofree gint64 *index = g_new0 (gint64, MAX (leading, 1));

  if (tensor->rank <= 1)
    {
      g_string_append_printf (out, "%" G_GINT64_FORMAT "]", row * columns);
      return g_string_free (out, FALSE);
    }
  for (int k = leading - 1; k >= 0; k--)
    {
      index[k] = tensor->dims[k] > 0 ? rest % tensor->dims[k] : 0;
      rest = tensor->dims[k] > 0 ? rest / tensor->dims[k] : 0;
    }
  for (int k = 0; k < leading; k++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, k > 0 ? "," : "", index[k]);
  g_string_append (out, ",:]");
  return g_string_free (out, FALSE);
}

GtkWidget *
graft_tensor_values_table_new (GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  gint64 columns = tensor->rank >= 2 ? tensor->dims[tensor->rank - 1] : MIN (numel, VECTOR_COLUMNS);
  gint64 rows;
  int natural_height = 0;
  GtkWidget *grid = gtk_grid_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();

  g_return_val_if_fail (numel <= GRAFT_TENSOR_TABLE_MAX_ELEMENTS, NULL);
  columns = MAX (columns, 1);
  rows = (numel + columns - 1) / columns;
  gtk_grid_set_column_spacing (GTK_GRID (grid), 12);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 2);
  gtk_widget_set_margin_start (grid, 6);
  gtk_widget_set_margin_end (grid, 6);
  gtk_widget_set_margin_top (grid, 4);
  gtk_widget_set_margin_bottom (grid, 4);
  gtk_widget_set_name (grid, "tensor-values-table");

  /* Column indices above a matrix's columns. */
  if (tensor->rank >= 2)
    for (gint64 c = 0; c < columns; c++)
      {
        g_autofree char *text = g_strdup_printf ("%" G_GINT64_FORMAT, c);

        gtk_grid_attach (GTK_GRID (grid), cell_label (text, TRUE), (int) c + 1, 0, 1, 1);
      }
  for (gint64 r = 0; r < rows; r++)
    {
      g_autofree char *index = tensor->rank >= 1 ? row_index (tensor, r, columns) : NULL;
      int top = (int) r + (tensor->rank >= 2 ? 1 : 0);

      if (index != NULL)
        gtk_grid_attach (GTK_GRID (grid), cell_label (index, TRUE), 0, top, 1, 1);
      for (gint64 c = 0; c < columns && r * columns + c < numel; c++)
        {
          g_autofree char *text = graft_tensor_format_element (tensor, r * columns + c);

          gtk_grid_attach (GTK_GRID (grid), cell_label (text != NULL ? text : "?", FALSE), (int) c + 1, top, 1, 1);
        }
    }

  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), grid);
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_AUTOMATIC, GTK_POLICY_AUTOMATIC);
  /* Natural height propagation alone leaves a horizontally scrolling
   * table two rows high (GTK 4.8): ask for the rows' height outright. */
  gtk_widget_measure (grid, GTK_ORIENTATION_VERTICAL, -1, NULL, &natural_height, NULL, NULL);
  if (natural_height <= TABLE_MAX_HEIGHT)
    gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_AUTOMATIC, GTK_POLICY_NEVER);
  else
    gtk_scrolled_window_set_min_content_height (GTK_SCROLLED_WINDOW (scroller), TABLE_MAX_HEIGHT);
  /* The sidebar scrolls vertically itself; the table keeps its own
   * horizontal scrolling so wide rows never widen the pane. */
  gtk_scrolled_window_set_propagate_natural_width (GTK_SCROLLED_WINDOW (scroller), FALSE);
  return scroller;
}

char *
graft_tensor_stats_format (const GraftTensorStats *stats, GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  GString *out = g_string_new (NULL);
  g_autofree char *min = NULL, *max = NULL;
  g_autofree char *zeros = format_count (stats->zero_count);
  g_autofree char *total = format_count (numel);

  if (stats->count == 0)
    {
      if (stats->nan_count > 0)
        return g_strdup_printf ("all %s elements are NaN", total);
      return g_strdup ("no elements");
    }
  /* min and max from their elements: an int64 INT64_MAX is no 9.22337e+18. */
  min = graft_tensor_format_element_short (tensor, stats->min_index);
  max = graft_tensor_format_element_short (tensor, stats->max_index);
  g_string_append_printf (out, "min %s · max %s · mean %.6g · std %.6g", min ? min : "?", max ? max : "?",
                          stats->mean, stats->std);
  g_string_append_printf (out, "\nsparsity %.4g %% (%s of %s elements are zero)",
                          numel > 0 ? 100.0 * (double) stats->zero_count / (double) numel : 0.0, zeros, total);
  if (stats->nan_count > 0)
    g_string_append_printf (out, " · %" G_GINT64_FORMAT " NaN", stats->nan_count);
  return g_string_free (out, FALSE);
}
