/* graft-cli on the files issue 19 found broken: a state_dict has no graph
 * to draw (no blank picture), random bytes named .pt get a message that
 * claims no format, and an expanded big graph is drawn at a readable scale
 * (SVG at full size, PDF tiled into pages, PNG refused with a message). */
#include <string.h>
#include <glib/gstdio.h>

#include "cli-run.h"
#include "../test-python.h"
#include "../test-scratch.h"

static void
run_python (const char *const *args)
{
  g_autofree char *python = graft_test_python ();
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  int status;

  g_ptr_array_add (argv, python);
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err,
                               &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s failed: %s", args[0], err);
}

static char *
scratch_dir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = graft_test_scratch_dir ("graft-cli-viewer-XXXXXX", &error);

  g_assert_no_error (error);
  return dir;
}

static void
test_state_dict_render (void)
{
  g_autofree char *dir = scratch_dir ();
  g_autofree char *weights = g_build_filename (dir, "state_dict.pt", NULL);
  g_autofree char *png = g_build_filename (dir, "x.png", NULL);
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "gui", "make-state-dict.py", NULL);
  const char *make[] = { script, weights, NULL };
  const char *render[] = { "render", weights, "-o", png, NULL };
  g_auto (Run) run = { 0 };

  run_python (make);
  run_cli (&run, render);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_nonnull (strstr (run.err, "is a state_dict: 2 tensors and no graph to draw"));
  g_assert_nonnull (strstr (run.err, "graft-cli info"));
  /* One line on stderr, and no picture. */
  g_assert_true (g_str_has_suffix (run.err, "\n"));
  g_assert_true (strchr (run.err, '\n')[1] == '\0');
  g_assert_false (g_file_test (png, G_FILE_TEST_EXISTS));
  graft_test_remove_tree (dir);
}

static void
write_random_file (const char *path)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (19);
  guint8 bytes[4096];

  for (guint i = 0; i < sizeof bytes; i++)
    bytes[i] = g_rand_int_range (rand, 0, 256);
  bytes[0] = 0x3f;  /* no signature by chance */
  g_assert_true (g_file_set_contents (path, (const char *) bytes, sizeof bytes, NULL));
}

static void
test_random_bytes_message (void)
{
  g_autofree char *dir = scratch_dir ();
  g_autofree char *pt = g_build_filename (dir, "random.pt", NULL);
  g_autofree char *onnx = g_build_filename (dir, "random.onnx", NULL);
  const char *info_pt[] = { "info", pt, NULL };
  const char *info_onnx[] = { "info", onnx, NULL };
  g_auto (Run) pt_run = { 0 };
  g_auto (Run) onnx_run = { 0 };

  write_random_file (pt);
  write_random_file (onnx);
  run_cli (&pt_run, info_pt);
  g_assert_cmpint (pt_run.status, ==, 1);
  g_assert_nonnull (strstr (pt_run.err, "random.pt: neither a PyTorch archive nor ONNX: it starts with 3f "));
  g_assert_null (strstr (pt_run.err, "not a readable ONNX file"));
  /* Named .onnx, it is meant as ONNX: the ONNX reader's own words. */
  run_cli (&onnx_run, info_onnx);
  g_assert_cmpint (onnx_run.status, ==, 1);
  g_assert_nonnull (strstr (onnx_run.err, "ONNX"));
  g_assert_null (strstr (onnx_run.err, "neither a PyTorch archive"));
  graft_test_remove_tree (dir);
}

static guint
count_pdf_pages (const char *path)
{
  g_autofree char *contents = NULL;
  gsize length;
  guint pages = 0;

  g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
  for (gsize i = 0; i + 11 <= length; i++)
    if (memcmp (contents + i, "/Type /Page", 11) == 0 && contents[i + 11] != 's')
      pages++;
  return pages;
}

/* The height attribute of the <svg> element, in points. */
static double
svg_height (const char *path)
{
  g_autofree char *contents = NULL;
  const char *height;

  g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
  height = strstr (contents, "height=\"");
  g_assert_nonnull (height);
  return g_ascii_strtod (height + strlen ("height=\""), NULL);
}

static void
test_expanded_big_graph (void)
{
  g_autofree char *dir = scratch_dir ();
  g_autofree char *model = g_build_filename (dir, "long-chain.onnx", NULL);
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "cli", "make-long-chain.py", NULL);
  g_autofree char *png = g_build_filename (dir, "chain.png", NULL);
  g_autofree char *svg = g_build_filename (dir, "chain.svg", NULL);
  g_autofree char *pdf = g_build_filename (dir, "chain.pdf", NULL);
  const char *make[] = { script, model, "12", "100", NULL };
  const char *png_all[] = { "render", model, "-o", png, "--expand-all", NULL };
  const char *png_collapsed[] = { "render", model, "-o", png, NULL };
  const char *svg_all[] = { "render", model, "-o", svg, "--expand-all", NULL };
  const char *pdf_all[] = { "render", model, "-o", pdf, "--expand-all", NULL };
  g_auto (Run) png_run = { 0 };
  g_auto (Run) collapsed_run = { 0 };
  g_auto (Run) svg_run = { 0 };
  g_auto (Run) pdf_run = { 0 };
  double height;
  guint pages;

  run_python (make);
  run_cli (&png_run, png_all);
  g_assert_cmpint (png_run.status, ==, 1);
  g_assert_nonnull (strstr (png_run.err, "a PNG at a readable scale would be"));
  g_assert_nonnull (strstr (png_run.err, "write .svg or .pdf instead"));
  g_assert_false (g_file_test (png, G_FILE_TEST_EXISTS));

  /* Collapsed, the same model makes an ordinary picture. */
  run_cli (&collapsed_run, png_collapsed);
  g_assert_cmpint (collapsed_run.status, ==, 0);
  g_assert_true (g_file_test (png, G_FILE_TEST_EXISTS));

  /* Full size: 1200 boxes one under the other. */
  run_cli (&svg_run, svg_all);
  g_assert_cmpint (svg_run.status, ==, 0);
  height = svg_height (svg);
  g_test_message ("svg height %.0f pt", height);
  g_assert_cmpfloat (height, >, 1200 * 30.0);

  /* Pages of at most 200 inches, enough of them to hold it at full size. */
  run_cli (&pdf_run, pdf_all);
  g_assert_cmpint (pdf_run.status, ==, 0);
  pages = count_pdf_pages (pdf);
  g_test_message ("pdf pages %u", pages);
  g_assert_cmpuint (pages, ==, (guint) ((height + 14400 - 1) / 14400));
  g_assert_nonnull (strstr (png_run.err, "tiled into"));
  g_assert_nonnull (strstr (png_run.err, "or leave groups collapsed"));
  graft_test_remove_tree (dir);
}

/* "load ... 0.1 s, ... 7 nodes, 6 boxes, 0 groups" → 6 */
static guint
boxes_in_timings (const char *err)
{
  const char *boxes = strstr (err, " boxes");
  const char *start = boxes;

  g_assert_nonnull (boxes);
  while (start > err && g_ascii_isdigit (start[-1]))
    start--;
  return (guint) g_ascii_strtoull (start, NULL, 10);
}

/* TorchScript render: --shape gives the input a shape (bad names are
 * refused with the inputs listed); module attributes are listed in their
 * readers unless --attribute-nodes asks for their boxes. */
static void
test_torchscript_render_options (void)
{
  g_autofree char *dir = scratch_dir ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "torchscript",
                                              "make-conv-model.py", NULL);
  g_autofree char *model = g_build_filename (dir, "attribute_scripted.pt", NULL);
  g_autofree char *png = g_build_filename (dir, "x.png", NULL);
  const char *make[] = { script, dir, NULL };
  const char *folded[] = { "render", model, "-o", png, "--expand-all", "--timings", "--shape", "x=1x3x16x16", NULL };
  const char *boxes[] = { "render", model, "-o", png, "--expand-all", "--timings", "--attribute-nodes", NULL };
  const char *bad_name[] = { "render", model, "-o", png, "--shape", "image=1x3x16x16", NULL };
  const char *bad_shape[] = { "render", model, "-o", png, "--shape", "x=1x0x16", NULL };
  g_auto (Run) run_folded = { 0 };
  g_auto (Run) run_boxes = { 0 };
  g_auto (Run) run_bad_name = { 0 };
  g_auto (Run) run_bad_shape = { 0 };

  run_python (make);
  run_cli (&run_folded, folded);
  g_assert_cmpint (run_folded.status, ==, 0);
  g_assert_true (g_file_test (png, G_FILE_TEST_EXISTS));
  run_cli (&run_boxes, boxes);
  g_assert_cmpint (run_boxes.status, ==, 0);
  g_test_message ("%s%s", run_folded.err, run_boxes.err);
  /* self.scale and self.start_dim get boxes of their own. */
  g_assert_cmpuint (boxes_in_timings (run_boxes.err), ==, boxes_in_timings (run_folded.err) + 2);

  run_cli (&run_bad_name, bad_name);
  g_assert_cmpint (run_bad_name.status, ==, 1);
  g_assert_nonnull (strstr (run_bad_name.err, "no tensor input 'image' (its inputs: 'x')"));
  run_cli (&run_bad_shape, bad_shape);
  g_assert_cmpint (run_bad_shape.status, ==, 1);
  g_assert_nonnull (strstr (run_bad_shape.err, "--shape x=1x0x16"));
  graft_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  g_test_add_func ("/cli-viewer/state-dict-render", test_state_dict_render);
  g_test_add_func ("/cli-viewer/random-bytes-message", test_random_bytes_message);
  g_test_add_func ("/cli-viewer/expanded-big-graph", test_expanded_big_graph);
  g_test_add_func ("/cli-viewer/torchscript-render-options", test_torchscript_render_options);
  return g_test_run ();
}
