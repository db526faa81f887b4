#include "run-pane.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "debug/value-check.h"
#include "runtime/inputs.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "runtime/tensor-file.h"

#define PROGRESS_POLL_MS 50

struct _GraftRunPane
{
  GtkWidget parent_instance;

  GtkProgressBar *progress_bar;
  GtkSpinButton *seed_spin;
  GtkSpinButton *threads_spin;
  GtkDropDown *precision_dropdown;
  GtkLabel *status_label;
  GtkWidget *reduce_button;   /* "Reduce to Here…", shown while a NaN/Inf source is known */
  GtkListBox *inputs_list;
  GtkListBox *outputs_list;

  GraftModel *model;
  GraftRuntime *runtime;      /* planned on the first run after set_model */
  GHashTable *dims;           /* symbol → gint64* */
  GHashTable *files;          /* input name → path */
  GHashTable *shapes;         /* input name → GraftShape*: given for inputs that declare none, or of the last run */
  GHashTable *dim_spins;      /* symbol → GtkSpinButton* (borrowed) */
  GCancellable *cancellable;  /* while running */
  struct _RunJob *job;
  guint progress_id;
  guint generation;

  GPtrArray *outputs;         /* GraftRtTensor* of the last run */
  GPtrArray *output_names;    /* char* */
  GHashTable *timings;        /* GraftNode* → double* */
  GHashTable *fused;          /* GraftNode* → const char*: the fused operator its time covers */
  GraftNode *nonfinite_node;  /* borrowed: where the last run's NaN/Inf came from, or NULL */
  char *status;
};

G_DEFINE_FINAL_TYPE (GraftRunPane, graft_run_pane, GTK_TYPE_WIDGET)

enum { SIGNAL_RUN_FINISHED, SIGNAL_INPUT_SHAPES_CHANGED, SIGNAL_REDUCE_TO_NODE, N_SIGNALS };
static guint signals[N_SIGNALS];

enum { PROP_0, PROP_RUNNING, N_PROPS };
static GParamSpec *properties[N_PROPS];

typedef struct _RunJob {
  GraftRunPane *self;         /* strong */
  GraftModel *model;          /* strong: the graph the worker reads */
  GraftRuntime *runtime;      /* owned once the pane let go of it */
  gboolean owns_runtime;
  GHashTable *inputs;         /* name → GraftRtTensor* */
  guint generation;
  gint done, total;           /* atomic, written by the worker */
  gint64 start_time;
} RunJob;

static void
run_job_free (RunJob *job)
{
  if (job->owns_runtime)
    graft_runtime_free (job->runtime);
  g_hash_table_unref (job->inputs);
  g_object_unref (job->model);
  g_object_unref (job->self);
  g_free (job);
}

static void
set_status (GraftRunPane *self, const char *status, gboolean error)
{
  g_free (self->status);
  self->status = g_strdup (status);
  gtk_label_set_text (self->status_label, status);
  if (error)
    gtk_widget_add_css_class (GTK_WIDGET (self->status_label), "error");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->status_label), "error");
}

static void
update_actions (GraftRunPane *self)
{
  gboolean running = self->cancellable != NULL;

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.start", self->model != NULL && !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.cancel", running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.save-outputs", self->outputs != NULL && !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.save-outputs-to", self->outputs != NULL && !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.reduce-to-here", self->nonfinite_node != NULL && !running);
}

/* gtk_list_box_remove_all() is GTK 4.12; Graft targets 4.8. */
static void
remove_all_rows (GtkListBox *list)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (list))) != NULL)
    gtk_list_box_remove (list, child);
}

static GtkWidget *
two_line_row (const char *title, const char *detail, GtkWidget *suffix)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *text = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *title_label = gtk_label_new (title);
  GtkWidget *detail_label = gtk_label_new (detail);

  gtk_widget_add_css_class (box, "run-row");
  gtk_label_set_xalign (GTK_LABEL (title_label), 0);
  gtk_label_set_xalign (GTK_LABEL (detail_label), 0);
  gtk_label_set_ellipsize (GTK_LABEL (title_label), PANGO_ELLIPSIZE_MIDDLE);
  gtk_label_set_wrap (GTK_LABEL (detail_label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (detail_label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (detail_label), TRUE);
  /* Wrapped labels ask for their unwrapped width otherwise. */
  gtk_label_set_max_width_chars (GTK_LABEL (detail_label), 24);
  gtk_widget_set_tooltip_text (title_label, title);
  gtk_widget_add_css_class (detail_label, "caption");
  gtk_widget_add_css_class (detail_label, "numeric");
  gtk_widget_set_hexpand (text, TRUE);
  gtk_box_append (GTK_BOX (text), title_label);
  gtk_box_append (GTK_BOX (text), detail_label);
  gtk_box_append (GTK_BOX (box), text);
  if (suffix != NULL)
    {
      gtk_widget_set_valign (suffix, GTK_ALIGN_CENTER);
      gtk_box_append (GTK_BOX (box), suffix);
    }
  return box;
}

/* ---------- inputs ---------- */

static GPtrArray *
fed_inputs (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GPtrArray *inputs = g_ptr_array_new ();

  for (guint i = 0; graph != NULL && i < graph->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->inputs, i);

      if (value->initializer == NULL)
        g_ptr_array_add (inputs, value);
    }
  return inputs;
}

static void rebuild_inputs (GraftRunPane *self);

static void
on_file_chosen (GtkNativeDialog *dialog, int response, GraftRunPane *self)
{
  const char *input = g_object_get_data (G_OBJECT (dialog), "graft-input");

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;

      if (path != NULL)
        graft_run_pane_set_input_file (self, input, path);
    }
  g_object_unref (dialog);
}

static void
on_choose_file (GtkButton *button, GraftRunPane *self)
{
  const char *input = g_object_get_data (G_OBJECT (button), "graft-input");
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  g_autofree char *title = g_strdup_printf ("Input “%s”", input);
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();

  gtk_file_filter_set_name (filter, "NumPy and TensorProto Files");
  gtk_file_filter_add_pattern (filter, "*.npy");
  gtk_file_filter_add_pattern (filter, "*.pb");
  dialog = gtk_file_chooser_native_new (title, GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                        GTK_FILE_CHOOSER_ACTION_OPEN, "_Use", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_object_set_data_full (G_OBJECT (dialog), "graft-input", g_strdup (input), g_free);
  g_signal_connect (dialog, "response", G_CALLBACK (on_file_chosen), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
on_clear_file (GtkButton *button, GraftRunPane *self)
{
  graft_run_pane_set_input_file (self, g_object_get_data (G_OBJECT (button), "graft-input"), NULL);
}

static void
on_dim_changed (GtkSpinButton *spin, GraftRunPane *self)
{
  const char *symbol = g_object_get_data (G_OBJECT (spin), "graft-symbol");
  gint64 value = gtk_spin_button_get_value_as_int (spin);

  g_hash_table_insert (self->dims, g_strdup (symbol), g_memdup2 (&value, sizeof value));
}

static gboolean
needs_given_shape (GraftValue *input)
{
  return input->kind == GRAFT_VALUE_TENSOR && input->shape.rank < 0;
}

static void
on_shape_entered (GtkEntry *entry, GraftRunPane *self)
{
  const char *input = g_object_get_data (G_OBJECT (entry), "graft-input");
  g_autofree char *name = g_strdup (input);
  g_autofree char *text = g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry)));
  GtkWidget *popover = gtk_widget_get_ancestor (GTK_WIDGET (entry), GTK_TYPE_POPOVER);
  g_autoptr(GError) error = NULL;

  if (!graft_run_pane_set_input_shape (self, name, text, &error))
    {
      g_autofree char *message = g_strdup_printf ("Input “%s”: %s", name, error->message);

      set_status (self, message, TRUE);
      gtk_widget_add_css_class (GTK_WIDGET (entry), "error");
      return;
    }
  if (popover != NULL)
    gtk_popover_popdown (GTK_POPOVER (popover));
}

static void
on_popover_choose_file (GtkButton *button, GraftRunPane *self)
{
  GtkWidget *popover = gtk_widget_get_ancestor (GTK_WIDGET (button), GTK_TYPE_POPOVER);

  if (popover != NULL)
    gtk_popover_popdown (GTK_POPOVER (popover));
  on_choose_file (button, self);
}

/* Random data for an input that declares no shape needs one: "Random"
 * asks for it (a file remains an alternative). */
static GtkWidget *
shape_request_button (GraftRunPane *self, GraftValue *input)
{
  GraftShape *given = g_hash_table_lookup (self->shapes, input->name);
  g_autofree char *shape_text = given != NULL ? graft_shape_to_string (given) : NULL;
  g_autofree char *label = given != NULL ? g_strdup_printf ("Random %s", shape_text) : g_strdup ("Random…");
  GtkWidget *button = gtk_menu_button_new ();
  GtkWidget *popover = gtk_popover_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  GtkWidget *heading = gtk_label_new ("Shape of the random data");
  GtkWidget *entry = gtk_entry_new ();
  GtkWidget *file_button = gtk_button_new_with_mnemonic ("_Choose a File Instead…");

  gtk_menu_button_set_label (GTK_MENU_BUTTON (button), label);
  gtk_widget_set_name (button, "run-input-shape");
  gtk_widget_set_tooltip_text (button, "This input declares no shape: give one for random data "
                                       "(the graph's edges then show the shapes it implies)");
  gtk_label_set_xalign (GTK_LABEL (heading), 0);
  gtk_widget_add_css_class (heading, "heading");
  gtk_entry_set_placeholder_text (GTK_ENTRY (entry), "1x3x224x224");
  gtk_entry_set_activates_default (GTK_ENTRY (entry), FALSE);
  if (shape_text != NULL)
    gtk_editable_set_text (GTK_EDITABLE (entry), shape_text);
  gtk_widget_set_name (entry, "run-input-shape-entry");
  g_object_set_data_full (G_OBJECT (entry), "graft-input", g_strdup (input->name), g_free);
  g_signal_connect (entry, "activate", G_CALLBACK (on_shape_entered), self);
  g_object_set_data_full (G_OBJECT (file_button), "graft-input", g_strdup (input->name), g_free);
  g_signal_connect (file_button, "clicked", G_CALLBACK (on_popover_choose_file), self);
  gtk_widget_add_css_class (file_button, "flat");
  gtk_box_append (GTK_BOX (box), heading);
  gtk_box_append (GTK_BOX (box), entry);
  gtk_box_append (GTK_BOX (box), file_button);
  gtk_popover_set_child (GTK_POPOVER (popover), box);
  gtk_popover_set_default_widget (GTK_POPOVER (popover), entry);
  gtk_menu_button_set_popover (GTK_MENU_BUTTON (button), popover);
  return button;
}

static GtkWidget *
input_source_widget (GraftRunPane *self, GraftValue *input)
{
  const char *path = g_hash_table_lookup (self->files, input->name);
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  g_autofree char *basename = path != NULL ? g_path_get_basename (path) : NULL;
  GtkWidget *button;

  if (path == NULL && needs_given_shape (input))
    return shape_request_button (self, input);
  button = gtk_button_new_with_label (path != NULL ? basename : "Random");
  gtk_widget_add_css_class (box, "linked");
  gtk_widget_set_tooltip_text (button, path != NULL ? path : "Random data; click to feed a .npy or .pb file");
  g_object_set_data_full (G_OBJECT (button), "graft-input", g_strdup (input->name), g_free);
  g_signal_connect (button, "clicked", G_CALLBACK (on_choose_file), self);
  gtk_box_append (GTK_BOX (box), button);
  if (path != NULL)
    {
      GtkWidget *clear = gtk_button_new_from_icon_name ("edit-clear-symbolic");

      gtk_widget_set_tooltip_text (clear, "Use random data");
      gtk_accessible_update_property (GTK_ACCESSIBLE (clear), GTK_ACCESSIBLE_PROPERTY_LABEL, "Use random data", -1);
      g_object_set_data_full (G_OBJECT (clear), "graft-input", g_strdup (input->name), g_free);
      g_signal_connect (clear, "clicked", G_CALLBACK (on_clear_file), self);
      gtk_box_append (GTK_BOX (box), clear);
    }
  return box;
}

static void
add_dim_row (GraftRunPane *self, const char *symbol)
{
  gint64 *value = g_hash_table_lookup (self->dims, symbol);
  GtkWidget *spin = gtk_spin_button_new_with_range (0, 1 << 20, 1);
  g_autofree char *range = graft_model_describe_dim_range (self->model, symbol);
  g_autofree char *subtitle = range ? g_strdup_printf ("random inputs' size · %s", range) : NULL;
  gint64 min = 1;

  if (value == NULL)
    {
      /* A declared range (torch.export refuses 0 and 1 for a Dim of
       * min 2) gives the first size that runs. */
      if (!graft_model_get_dim_range (self->model, symbol, &min, NULL) || min < 1)
        min = 1;
      g_hash_table_insert (self->dims, g_strdup (symbol), g_memdup2 (&min, sizeof min));
      value = g_hash_table_lookup (self->dims, symbol);
    }
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (spin), *value);
  g_object_set_data_full (G_OBJECT (spin), "graft-symbol", g_strdup (symbol), g_free);
  g_signal_connect (spin, "value-changed", G_CALLBACK (on_dim_changed), self);
  g_hash_table_insert (self->dim_spins, g_strdup (symbol), spin);
  gtk_list_box_append (self->inputs_list, two_line_row (symbol, subtitle ? subtitle : "random inputs' size", spin));
}

static void
rebuild_inputs (GraftRunPane *self)
{
  g_autoptr(GPtrArray) inputs = NULL;
  g_autoptr(GPtrArray) symbols = g_ptr_array_new ();

  remove_all_rows (self->inputs_list);
  g_hash_table_remove_all (self->dim_spins);
  if (self->model == NULL)
    return;
  inputs = fed_inputs (self->model);
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      g_autofree char *shape = graft_shape_to_string (&input->shape);
      g_autofree char *detail = NULL;

      if (needs_given_shape (input))
        detail = g_strdup_printf ("%s, no declared shape",
                                  input->dtype != GRAFT_DTYPE_UNDEFINED ? graft_dtype_to_string (input->dtype)
                                                                        : "Tensor");
      else
        detail = g_strdup_printf ("%s %s", input->kind == GRAFT_VALUE_TENSOR
                                  ? graft_dtype_to_string (input->dtype) : input->type_string,
                                  input->kind == GRAFT_VALUE_TENSOR ? shape : "");

      gtk_list_box_append (self->inputs_list, two_line_row (input->name, detail, input_source_widget (self, input)));
      for (int d = 0; d < input->shape.rank; d++)
        if (input->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC
            && !g_ptr_array_find_with_equal_func (symbols, input->shape.dims[d].symbol, g_str_equal, NULL))
          g_ptr_array_add (symbols, (gpointer) input->shape.dims[d].symbol);
    }
  for (guint i = 0; i < symbols->len; i++)
    add_dim_row (self, g_ptr_array_index (symbols, i));
  if (inputs->len == 0)
    gtk_list_box_append (self->inputs_list, two_line_row ("No inputs", "the graph computes from its constants", NULL));
}

/* The same data graft-cli run --random feeds (uniform in [-1, 1) for
 * floats, [0, 10) for integers), with errors that name the pane's remedies. */
static GraftRtTensor *
random_input (GraftValue *input, const GraftShape *given, GHashTable *dims, GRand *rng, GError **error)
{
  gint64 shape[GRAFT_RT_MAX_RANK];
  GraftDType dtype = input->dtype == GRAFT_DTYPE_UNDEFINED ? GRAFT_DTYPE_FLOAT32 : input->dtype;
  const GraftShape *declared = input->shape.rank >= 0 ? &input->shape : given;
  GraftRtTensor *tensor;

  if (input->kind != GRAFT_VALUE_TENSOR || declared == NULL || declared->rank > GRAFT_RT_MAX_RANK)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "Input “%s” has no declared tensor shape: give it one (Random…) or choose a file", input->name);
      return NULL;
    }
  for (int d = 0; d < declared->rank; d++)
    {
      GraftDim dim = declared->dims[d];
      gint64 *value = dim.kind == GRAFT_DIM_SYMBOLIC ? g_hash_table_lookup (dims, dim.symbol) : NULL;

      if (dim.kind == GRAFT_DIM_FIXED)
        shape[d] = dim.value;
      else if (value != NULL)
        shape[d] = *value;
      else
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                       "Input “%s” has an unknown size at axis %d: choose a file for it", input->name, d);
          return NULL;
        }
    }
  tensor = graft_runtime_random_tensor (dtype, declared->rank, shape, rng, error);
  if (tensor == NULL)
    g_prefix_error (error, "Input “%s”: ", input->name);
  return tensor;
}

static gboolean plan (GraftRunPane *self, GError **error);

/* The inputs the pane feeds: of the plan (checked against it), or of
 * the graph as declared when Graft cannot plan the model. */
static GHashTable *
make_inputs (GraftRunPane *self, GError **error)
{
  g_autoptr(GHashTable) fed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                     (GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GRand) rng = g_rand_new_with_seed (gtk_spin_button_get_value_as_int (self->seed_spin));
  g_autoptr(GPtrArray) declared = self->runtime == NULL ? fed_inputs (self->model) : NULL;
  GPtrArray *inputs = self->runtime != NULL ? graft_runtime_get_inputs (self->runtime) : declared;

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      const char *path = g_hash_table_lookup (self->files, input->name);
      GraftRtTensor *tensor = path != NULL ? graft_tensor_file_read (path, input->kind, NULL, error)
                                           : random_input (input, g_hash_table_lookup (self->shapes, input->name),
                                                           self->dims, rng, error);

      if (tensor == NULL)
        return NULL;
      g_hash_table_insert (fed, g_strdup (input->name), tensor);
      if (self->runtime != NULL && !graft_runtime_check_input (self->runtime, input, tensor, error))
        return NULL;
    }
  return g_steal_pointer (&fed);
}

GHashTable *
graft_run_pane_make_inputs (GraftRunPane *self, char **description, GError **error)
{
  g_autoptr(GError) plan_error = NULL;
  g_autoptr(GString) text = g_string_new (NULL);
  GHashTableIter iter;
  gpointer name, path;

  g_return_val_if_fail (GRAFT_IS_RUN_PANE (self), NULL);
  if (self->model == NULL)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "No model");
      return NULL;
    }
  /* a model Graft cannot plan (an op without a kernel) still declares
   * its inputs: they are made for the declared types then */
  plan (self, &plan_error);
  GHashTable *inputs = make_inputs (self, error);
  if (inputs == NULL || description == NULL)
    return inputs;
  g_hash_table_iter_init (&iter, self->files);
  while (g_hash_table_iter_next (&iter, &name, &path))
    {
      g_autofree char *base = g_path_get_basename (path);
      g_string_append_printf (text, "%s%s from %s", text->len ? ", " : "", (char *) name, base);
    }
  if (g_hash_table_size (self->files) < g_hash_table_size (inputs))
    g_string_append_printf (text, "%srandom data of seed %d", text->len ? "; the others " : "",
                            gtk_spin_button_get_value_as_int (self->seed_spin));
  *description = g_string_free (g_steal_pointer (&text), FALSE);
  return inputs;
}

/* ---------- outputs ---------- */

static char *
describe_output (GraftRtTensor *tensor)
{
  g_autofree char *description = graft_rt_tensor_describe (tensor);
  GraftRtStats stats;

  if (!graft_rt_tensor_compute_stats (tensor, &stats))
    return g_steal_pointer (&description);
  if (stats.count == 0)
    return g_strdup_printf ("%s all NaN", description);
  return g_strdup_printf ("%s min=%.5g max=%.5g mean=%.5g%s", description, stats.min, stats.max, stats.mean,
                          stats.nan_count > 0 ? " (has NaN)" : "");
}

static void
show_outputs (GraftRunPane *self)
{
  remove_all_rows (self->outputs_list);
  for (guint i = 0; self->outputs != NULL && i < self->outputs->len; i++)
    {
      g_autofree char *detail = describe_output (g_ptr_array_index (self->outputs, i));

      gtk_list_box_append (self->outputs_list, two_line_row (g_ptr_array_index (self->output_names, i), detail, NULL));
    }
}

static void
clear_results (GraftRunPane *self)
{
  g_clear_pointer (&self->outputs, g_ptr_array_unref);
  g_clear_pointer (&self->output_names, g_ptr_array_unref);
  g_clear_pointer (&self->timings, g_hash_table_unref);
  g_clear_pointer (&self->fused, g_hash_table_unref);
  self->nonfinite_node = NULL;
  gtk_widget_set_visible (self->reduce_button, FALSE);
  remove_all_rows (self->outputs_list);
}

/* ---------- running ---------- */

static void
on_progress (guint done, guint total, gpointer user_data)
{
  RunJob *job = user_data;

  g_atomic_int_set (&job->done, done);
  g_atomic_int_set (&job->total, total);
}

static gboolean
poll_progress (gpointer user_data)
{
  GraftRunPane *self = user_data;
  int done, total;
  g_autofree char *text = NULL;

  if (self->job == NULL)
    return G_SOURCE_CONTINUE;
  done = g_atomic_int_get (&self->job->done);
  total = g_atomic_int_get (&self->job->total);
  if (total > 0)
    {
      text = g_strdup_printf ("%d of %d nodes", done, total);
      gtk_progress_bar_set_fraction (self->progress_bar, (double) done / total);
      gtk_progress_bar_set_text (self->progress_bar, text);
    }
  else
    gtk_progress_bar_pulse (self->progress_bar);
  return G_SOURCE_CONTINUE;
}

static void
stop_running (GraftRunPane *self)
{
  g_clear_object (&self->cancellable);
  g_clear_handle_id (&self->progress_id, g_source_remove);
  self->job = NULL;
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
}

static void
collect_timings (GraftRunPane *self, GraftRuntime *runtime)
{
  GArray *timings = graft_runtime_get_timings (runtime);

  self->timings = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  self->fused = g_hash_table_new (NULL, NULL);
  for (guint i = 0; timings != NULL && i < timings->len; i++)
    {
      GraftNodeTiming *timing = &g_array_index (timings, GraftNodeTiming, i);

      if (timing->calls > 0)
        g_hash_table_insert (self->timings, timing->node, g_memdup2 (&timing->seconds, sizeof (double)));
      if (graft_node_timing_is_fused (timing))
        g_hash_table_insert (self->fused, timing->node, (gpointer) timing->fused_op);
    }
}

/* The shapes a run was fed, for the inputs that declare none (a file
 * decides them): the graph's edges then show what this run computed. */
static void
record_input_shapes (GraftRunPane *self, GHashTable *fed)
{
  g_autoptr(GPtrArray) inputs = fed_inputs (self->model);
  gboolean changed = FALSE;

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      GraftRtTensor *tensor = g_hash_table_lookup (fed, input->name);
      GraftShape *shape;

      if (!needs_given_shape (input) || tensor == NULL || tensor->kind != GRAFT_RT_TENSOR)
        continue;
      shape = g_new0 (GraftShape, 1);
      graft_shape_init_fixed (shape, tensor->rank, tensor->dims);
      if (!graft_shape_equal (shape, g_hash_table_lookup (self->shapes, input->name)))
        {
          g_hash_table_insert (self->shapes, g_strdup (input->name), shape);
          changed = TRUE;
        }
      else
        graft_shape_free (shape);
    }
  if (changed)
    g_signal_emit (self, signals[SIGNAL_INPUT_SHAPES_CHANGED], 0);
}

static gboolean
outputs_hold_nonfinite (GPtrArray *outputs)
{
  for (guint i = 0; i < outputs->len; i++)
    {
      GraftValueRange range;
      graft_value_range_compute (NULL, outputs->pdata[i], &range);
      gboolean finite = graft_value_range_is_finite (&range);
      graft_value_range_clear (&range);
      if (!finite)
        return TRUE;
    }
  return FALSE;
}

/* NaN or Inf in the outputs: a second run on the same plan and inputs
 * watches every value (model/debug/value-check.h) for the node that made it. */
static void
check_values_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  RunJob *job = data;
  GError *error = NULL;
  GraftValueCheck *check = graft_value_check_run (job->runtime, job->inputs, cancellable, NULL, &error);

  if (check == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, check, (GDestroyNotify) graft_value_check_free);
}

static void
on_check_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  RunJob *job = user_data;
  g_autoptr(GraftRunPane) self = g_object_ref (job->self);
  g_autoptr(GraftValueCheck) check = g_task_propagate_pointer (G_TASK (result), NULL);

  if (job->generation != self->generation)
    {
      run_job_free (job);
      return;
    }
  stop_running (self);
  if (check != NULL && check->sources->len > 0)
    {
      guint first = g_array_index (check->sources, guint, 0);
      const GraftValueRange *range = &g_array_index (check->values, GraftValueRange, first);
      GraftNode *node = range->value->producer;
      g_autofree char *status = node ? g_strdup_printf ("%s — NaN/Inf first produced by %s '%s'", self->status,
                                                        node->op, node->name)
                                     : g_strdup_printf ("%s — input '%s' holds NaN/Inf", self->status,
                                                        range->value->name);
      self->nonfinite_node = node;
      gtk_widget_set_visible (self->reduce_button, node != NULL);
      set_status (self, status, TRUE);
    }
  gtk_progress_bar_set_text (self->progress_bar, "Done");
  run_job_free (job);
  update_actions (self);
  g_signal_emit (self, signals[SIGNAL_RUN_FINISHED], 0);
}

static void
start_value_check (GraftRunPane *self, RunJob *job)
{
  g_autoptr(GTask) task = NULL;

  self->job = job;
  self->cancellable = g_cancellable_new ();
  gtk_progress_bar_set_text (self->progress_bar, "Looking for the first NaN/Inf…");
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
  task = g_task_new (NULL, self->cancellable, on_check_done, job);
  g_task_set_task_data (task, job, NULL);
  g_task_run_in_thread (task, check_values_thread);
}

static void
on_run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  RunJob *job = user_data;
  /* The job may hold the last reference (the window closed during the run). */
  g_autoptr(GraftRunPane) self = g_object_ref (job->self);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) outputs = graft_runtime_run_finish (job->runtime, result, &error);
  double seconds = (g_get_monotonic_time () - job->start_time) / 1e6;

  if (job->generation != self->generation)
    {
      run_job_free (job);
      return;
    }
  stop_running (self);
  gtk_progress_bar_set_fraction (self->progress_bar, outputs != NULL ? 1.0 : 0.0);
  if (outputs == NULL)
    {
      g_autofree char *status = NULL;

      if (g_error_matches (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_CANCELLED)
          || g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        status = g_strdup ("Cancelled");
      else
        status = g_strdup_printf ("The run failed: %s", error->message);
      gtk_progress_bar_set_text (self->progress_bar, "");
      set_status (self, status, !g_str_equal (status, "Cancelled"));
    }
  else
    {
      GPtrArray *values = graft_runtime_get_outputs (job->runtime);
      g_autofree char *written_back = graft_graph_describe_written_back (graft_model_get_graph (self->model));
      /* the next run starts from the updated buffers, as ep.module()'s next call does */
      g_autofree char *state = written_back ? g_strdup_printf ("; buffers %s updated for the next run", written_back)
                                            : g_strdup ("");
      gboolean bf16 = graft_runtime_get_precision (job->runtime) == GRAFT_PRECISION_BF16;
      g_autofree char *status = g_strdup_printf ("Ran in %.3f s with %u thread%s%s%s", seconds,
                                                 graft_runtime_get_n_threads (job->runtime),
                                                 graft_runtime_get_n_threads (job->runtime) == 1 ? "" : "s",
                                                 bf16 ? ", weights in bf16" : "", state);

      self->outputs = g_steal_pointer (&outputs);
      self->output_names = g_ptr_array_new_with_free_func (g_free);
      for (guint i = 0; i < self->outputs->len; i++)
        g_ptr_array_add (self->output_names, g_strdup (i < values->len ? ((GraftValue *) g_ptr_array_index (values, i))->name
                                                                       : "output"));
      collect_timings (self, job->runtime);
      record_input_shapes (self, job->inputs);
      gtk_progress_bar_set_text (self->progress_bar, "Done");
      set_status (self, status, FALSE);
      show_outputs (self);
      if (outputs_hold_nonfinite (self->outputs))
        {
          start_value_check (self, job);
          return;
        }
    }
  run_job_free (job);
  update_actions (self);
  g_signal_emit (self, signals[SIGNAL_RUN_FINISHED], 0);
}

static gboolean
plan (GraftRunPane *self, GError **error)
{
  g_autoptr(GPtrArray) unsupported = NULL;

  if (self->runtime != NULL)
    return TRUE;
  if (!graft_runtime_check_supported (self->model, &unsupported, error))
    return FALSE;
  if (unsupported->len > 0)
    {
      g_autofree char *names = graft_runtime_describe_unsupported (self->model, unsupported);

      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "Cannot run this model: Graft's runtime has no kernel for %s", names);
      return FALSE;
    }
  self->runtime = graft_runtime_new (self->model, error);
  return self->runtime != NULL;
}

void
graft_run_pane_start (GraftRunPane *self)
{
  g_autoptr(GError) error = NULL;
  GHashTable *inputs;
  RunJob *job;

  g_return_if_fail (GRAFT_IS_RUN_PANE (self));
  if (self->model == NULL || self->cancellable != NULL)
    return;
  clear_results (self);
  if (!plan (self, &error) || (inputs = make_inputs (self, &error)) == NULL)
    {
      set_status (self, error->message, TRUE);
      gtk_progress_bar_set_fraction (self->progress_bar, 0);
      gtk_progress_bar_set_text (self->progress_bar, "");
      update_actions (self);
      g_signal_emit (self, signals[SIGNAL_RUN_FINISHED], 0);
      return;
    }
  graft_runtime_set_n_threads (self->runtime, gtk_spin_button_get_value_as_int (self->threads_spin));
  /* the choice is offered only where the CPU has bf16 (see init), so it holds */
  GraftPrecision precision = gtk_drop_down_get_selected (self->precision_dropdown) == 1 ? GRAFT_PRECISION_BF16
                                                                                      : GRAFT_PRECISION_F32;
  if (!graft_runtime_set_precision (self->runtime, precision, NULL))
    graft_runtime_set_precision (self->runtime, GRAFT_PRECISION_F32, NULL);
  graft_runtime_set_profiling (self->runtime, TRUE);
  graft_runtime_reset_timings (self->runtime);

  job = g_new0 (RunJob, 1);
  job->self = g_object_ref (self);
  job->model = g_object_ref (self->model);
  job->runtime = self->runtime;
  job->inputs = inputs;
  job->generation = self->generation;
  job->start_time = g_get_monotonic_time ();
  self->job = job;
  self->cancellable = g_cancellable_new ();
  self->progress_id = g_timeout_add (PROGRESS_POLL_MS, poll_progress, self);
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  gtk_progress_bar_set_text (self->progress_bar, "Starting…");
  set_status (self, "Running…", FALSE);
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
  graft_runtime_run_async (self->runtime, inputs, self->cancellable, on_progress, job, on_run_done, job);
}

/* Lets go of the plan; a running job keeps it until it returns. */
static void
drop_runtime (GraftRunPane *self)
{
  if (self->job != NULL)
    {
      self->job->owns_runtime = TRUE;
      g_cancellable_cancel (self->cancellable);
      stop_running (self);
      self->runtime = NULL;
    }
  g_clear_pointer (&self->runtime, graft_runtime_free);
}

void
graft_run_pane_set_model (GraftRunPane *self, GraftModel *model)
{
  g_return_if_fail (GRAFT_IS_RUN_PANE (self));

  self->generation++;
  drop_runtime (self);
  clear_results (self);
  if (self->model != model)
    {
      g_hash_table_remove_all (self->files);
      g_hash_table_remove_all (self->dims);
      g_hash_table_remove_all (self->shapes);
    }
  g_set_object (&self->model, model);
  rebuild_inputs (self);
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  gtk_progress_bar_set_text (self->progress_bar, "");
  set_status (self, model != NULL ? "Random inputs are made from the seed; press Run (F5)" : "", FALSE);
  update_actions (self);
}

void
graft_run_pane_set_dim (GraftRunPane *self, const char *symbol, gint64 value)
{
  GtkSpinButton *spin;

  g_return_if_fail (GRAFT_IS_RUN_PANE (self));
  g_hash_table_insert (self->dims, g_strdup (symbol), g_memdup2 (&value, sizeof value));
  spin = g_hash_table_lookup (self->dim_spins, symbol);
  if (spin != NULL)
    gtk_spin_button_set_value (spin, value);
}

void
graft_run_pane_set_input_file (GraftRunPane *self, const char *input, const char *path)
{
  g_return_if_fail (GRAFT_IS_RUN_PANE (self));
  if (path != NULL)
    g_hash_table_insert (self->files, g_strdup (input), g_strdup (path));
  else
    g_hash_table_remove (self->files, input);
  rebuild_inputs (self);
}

gboolean
graft_run_pane_set_input_shape (GraftRunPane *self, const char *input, const char *text, GError **error)
{
  g_autoptr(GPtrArray) inputs = NULL;
  GraftValue *value = NULL;
  GraftShape *shape;

  g_return_val_if_fail (GRAFT_IS_RUN_PANE (self), FALSE);
  inputs = self->model != NULL ? fed_inputs (self->model) : g_ptr_array_new ();
  for (guint i = 0; i < inputs->len && value == NULL; i++)
    if (g_strcmp0 (((GraftValue *) g_ptr_array_index (inputs, i))->name, input) == 0)
      value = g_ptr_array_index (inputs, i);
  if (value == NULL || !needs_given_shape (value))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   value == NULL ? "the model has no input “%s”" : "input “%s” declares its shape", input);
      return FALSE;
    }
  if (text == NULL || *text == '\0')
    g_hash_table_remove (self->shapes, input);
  else
    {
      shape = g_new0 (GraftShape, 1);
      if (!graft_shape_parse (text, shape, error))
        {
          g_free (shape);
          return FALSE;
        }
      g_hash_table_insert (self->shapes, g_strdup (input), shape);
    }
  rebuild_inputs (self);
  set_status (self, "Random inputs are made from the seed; press Run (F5)", FALSE);
  g_signal_emit (self, signals[SIGNAL_INPUT_SHAPES_CHANGED], 0);
  return TRUE;
}

GHashTable *
graft_run_pane_get_input_shapes (GraftRunPane *self)
{
  g_return_val_if_fail (GRAFT_IS_RUN_PANE (self), NULL);
  return self->shapes;
}

gboolean
graft_run_pane_is_running (GraftRunPane *self)
{
  g_return_val_if_fail (GRAFT_IS_RUN_PANE (self), FALSE);
  return self->cancellable != NULL;
}

GraftNode *
graft_run_pane_get_nonfinite_node (GraftRunPane *self)
{
  g_return_val_if_fail (GRAFT_IS_RUN_PANE (self), NULL);
  return self->nonfinite_node;
}

GHashTable *
graft_run_pane_get_timings (GraftRunPane *self)
{
  return self->timings;
}

GHashTable *
graft_run_pane_get_fused (GraftRunPane *self)
{
  return self->fused;
}

/* ---------- saving ---------- */

/* [A-Za-z0-9._-] only, never hidden, unique among the names used. */
static char *
output_file_name (const char *name, guint index, GHashTable *used)
{
  GString *stem = g_string_new (NULL);
  g_autofree char *base = NULL;

  for (const char *p = name; p != NULL && *p != '\0' && stem->len < 200; p++)
    g_string_append_c (stem, g_ascii_isalnum (*p) || *p == '-' || *p == '_' || *p == '.' ? *p : '_');
  if (stem->len > 0 && stem->str[0] == '.')
    stem->str[0] = '_';
  if (stem->len == 0)
    g_string_printf (stem, "output_%u", index);
  base = g_strdup (stem->str);
  for (guint n = 2; g_hash_table_contains (used, stem->str); n++)
    g_string_printf (stem, "%s_%u", base, n);
  g_hash_table_add (used, g_strdup (stem->str));
  g_string_append (stem, ".npy");
  return g_string_free (stem, FALSE);
}

static gboolean
save_outputs (GraftRunPane *self, const char *folder, GError **error)
{
  g_autoptr(GHashTable) used = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  if (self->outputs == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Nothing to save: run the model first");
      return FALSE;
    }
  if (g_mkdir_with_parents (folder, 0755) != 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "Cannot create the folder %s: %s", folder,
                   g_strerror (errno));
      return FALSE;
    }
  for (guint i = 0; i < self->outputs->len; i++)
    {
      g_autofree char *file_name = output_file_name (g_ptr_array_index (self->output_names, i), i, used);
      g_autofree char *path = g_build_filename (folder, file_name, NULL);

      if (!graft_npy_write (path, g_ptr_array_index (self->outputs, i), error))
        return FALSE;
    }
  return TRUE;
}

static void
report_save (GraftRunPane *self, const char *folder, gboolean ok, const GError *error)
{
  g_autofree char *status = ok ? g_strdup_printf ("Saved %u output%s as .npy in %s", self->outputs->len,
                                                  self->outputs->len == 1 ? "" : "s", folder)
                               : g_strdup_printf ("Could not save the outputs: %s", error->message);

  set_status (self, status, !ok);
}

static void
save_outputs_to_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftRunPane *self = GRAFT_RUN_PANE (widget);
  const char *folder = g_variant_get_string (parameter, NULL);
  g_autoptr(GError) error = NULL;

  report_save (self, folder, save_outputs (self, folder, &error), error);
}

static void
on_folder_chosen (GtkNativeDialog *dialog, int response, GraftRunPane *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *folder = file != NULL ? g_file_get_path (file) : NULL;
      g_autoptr(GError) error = NULL;

      if (folder != NULL)
        report_save (self, folder, save_outputs (self, folder, &error), error);
    }
  g_object_unref (dialog);
}

static void
save_outputs_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new ("Save Outputs to Folder",
                                                              GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                              GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                                              "_Save", "_Cancel");

  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_folder_chosen), widget);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
reduce_to_here_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftRunPane *self = GRAFT_RUN_PANE (widget);

  if (self->nonfinite_node != NULL)
    g_signal_emit (self, signals[SIGNAL_REDUCE_TO_NODE], 0, self->nonfinite_node);
}

static void
start_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  graft_run_pane_start (GRAFT_RUN_PANE (widget));
}

static void
cancel_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftRunPane *self = GRAFT_RUN_PANE (widget);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
}

/* ---------- life cycle ---------- */

static void
graft_run_pane_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftRunPane *self = GRAFT_RUN_PANE (object);

  switch (prop_id)
    {
    case PROP_RUNNING: g_value_set_boolean (value, self->cancellable != NULL); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_run_pane_dispose (GObject *object)
{
  GraftRunPane *self = GRAFT_RUN_PANE (object);
  GtkWidget *child;

  self->generation++;
  drop_runtime (self);
  clear_results (self);
  g_clear_object (&self->model);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_RUN_PANE);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (graft_run_pane_parent_class)->dispose (object);
}

static void
graft_run_pane_finalize (GObject *object)
{
  GraftRunPane *self = GRAFT_RUN_PANE (object);

  g_hash_table_unref (self->dims);
  g_hash_table_unref (self->files);
  g_hash_table_unref (self->shapes);
  g_hash_table_unref (self->dim_spins);
  g_free (self->status);
  G_OBJECT_CLASS (graft_run_pane_parent_class)->finalize (object);
}

static void
graft_run_pane_class_init (GraftRunPaneClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_run_pane_dispose;
  object_class->finalize = graft_run_pane_finalize;
  object_class->get_property = graft_run_pane_get_property;

  properties[PROP_RUNNING] = g_param_spec_boolean ("running", NULL, NULL, FALSE,
                                                   G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  /* After every run attempt, successful or not. */
  signals[SIGNAL_RUN_FINISHED] = g_signal_new ("run-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                               0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  /* An input's given or recorded shape changed (graft_run_pane_get_input_shapes). */
  signals[SIGNAL_INPUT_SHAPES_CHANGED] = g_signal_new ("input-shapes-changed", G_TYPE_FROM_CLASS (klass),
                                                       G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);

  /* (GraftNode*: where the last run's NaN/Inf came from) */
  signals[SIGNAL_REDUCE_TO_NODE] = g_signal_new ("reduce-to-node", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                 NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
  gtk_widget_class_install_action (widget_class, "run.start", NULL, start_action);
  gtk_widget_class_install_action (widget_class, "run.reduce-to-here", NULL, reduce_to_here_action);
  gtk_widget_class_install_action (widget_class, "run.cancel", NULL, cancel_action);
  gtk_widget_class_install_action (widget_class, "run.save-outputs", NULL, save_outputs_action);
  gtk_widget_class_install_action (widget_class, "run.save-outputs-to", "s", save_outputs_to_action);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/run-pane.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, progress_bar);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, seed_spin);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, threads_spin);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, precision_dropdown);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, status_label);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, reduce_button);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, inputs_list);
  gtk_widget_class_bind_template_child (widget_class, GraftRunPane, outputs_list);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "runpane");
}

static void
graft_run_pane_init (GraftRunPane *self)
{
  self->dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_shape_free);
  self->dim_spins = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gtk_widget_init_template (GTK_WIDGET (self));
  gtk_list_box_set_placeholder (self->outputs_list,
                                two_line_row ("No outputs yet", "Run the model to see them", NULL));
  /* bf16 is offered where this CPU computes it; elsewhere the choice stays
   * f32 and says why */
  g_autoptr(GError) bf16_error = NULL;
  if (!graft_precision_available (GRAFT_PRECISION_BF16, &bf16_error))
    {
      gtk_widget_set_sensitive (GTK_WIDGET (self->precision_dropdown), FALSE);
      g_autofree char *why = g_strdup_printf ("f32: %s", bf16_error->message);
      gtk_widget_set_tooltip_text (GTK_WIDGET (self->precision_dropdown), why);
    }
  update_actions (self);
}
