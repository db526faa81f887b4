/* `graft-cli render`: pictures of the sample and of torchvision exports in
 * all three formats, and one-line errors for bad input. */
#include <string.h>
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <cairo.h>
#include "layout/export.h"
#include "test-files.h"
#include "../test-python.h"

static const char *
source_dir (void)
{
  const char *dir = g_getenv ("GRAFT_SOURCE_DIR");
  return dir != NULL ? dir : ".";
}

static char *
cli_path (void)
{
  const char *build = g_getenv ("GRAFT_BUILD_DIR");
  return g_build_filename (build != NULL ? build : ".", "app", "graft-cli", NULL);
}

static int
run_render (const char *const *args, char **err)
{
  g_autofree char *cli = cli_path ();
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  int status = -1;

  g_ptr_array_add (argv, cli);
  g_ptr_array_add (argv, (char *) "render");
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, err, &status, &error);
  g_assert_no_error (error);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* Runs a fixture generator; its output would garble the TAP stream, so it
 * is kept and shown only on failure. */
static void
run_generator (const char *const *argv)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *generator_out = NULL;
  g_autofree char *generator_err = NULL;
  int status;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &generator_out, &generator_err, &status,
                &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s failed: %s%s", argv[1], generator_out, generator_err);
}

static gboolean
ends_with_eof_marker (const char *contents, gsize length)
{
  for (gsize i = length - 16; i + 5 <= length; i++)
    if (memcmp (contents + i, "%%EOF", 5) == 0)
      return TRUE;
  return FALSE;
}

static void
assert_picture (const char *path, const char *format)
{
  g_autofree char *contents = NULL;
  gsize length;
  g_autoptr (GError) error = NULL;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  if (strcmp (format, "png") == 0)
    {
      guint32 width, height;

      g_assert_cmpuint (length, >, 24);
      g_assert_cmpmem (contents, 8, "\x89PNG\r\n\x1a\n", 8);
      width = GUINT32_FROM_BE (*(guint32 *) (contents + 16));
      height = GUINT32_FROM_BE (*(guint32 *) (contents + 20));
      g_assert_cmpuint (width, >, 50);
      g_assert_cmpuint (height, >, 50);
      /* layout/export.h's limits: a side and the pixel count. */
      g_assert_cmpuint (width, <=, GRAFT_EXPORT_PNG_MAX_SIDE);
      g_assert_cmpuint (height, <=, GRAFT_EXPORT_PNG_MAX_SIDE);
      g_assert_cmpfloat ((double) width * height, <=, GRAFT_EXPORT_PNG_MAX_PIXELS);
    }
  else if (strcmp (format, "svg") == 0)
    {
      g_assert_nonnull (strstr (contents, "<svg"));
      g_assert_nonnull (strstr (contents, "</svg>"));
    }
  else
    {
      g_assert_true (g_str_has_prefix (contents, "%PDF-"));
      /* Binary streams hold NULs: search the tail by length. */
      g_assert_cmpuint (length, >, 16);
      g_assert_true (ends_with_eof_marker (contents, length));
    }
}

/* The size in pixels is rounded up: the background must reach the last
 * column and row too (they were left black, a grey line on the border). */
static void
assert_png_border_is_background (const char *path)
{
  cairo_surface_t *surface = cairo_image_surface_create_from_png (path);
  int width = cairo_image_surface_get_width (surface), height = cairo_image_surface_get_height (surface);
  int stride = cairo_image_surface_get_stride (surface);
  const guint8 *data;
  guint32 background;

  g_assert_cmpint (cairo_surface_status (surface), ==, CAIRO_STATUS_SUCCESS);
  cairo_surface_flush (surface);
  data = cairo_image_surface_get_data (surface);
  background = *(const guint32 *) data & 0xffffff;
  for (int y = 0; y < height; y++)
    g_assert_cmphex (*(const guint32 *) (data + y * stride + 4 * (width - 1)) & 0xffffff, ==, background);
  for (int x = 0; x < width; x++)
    g_assert_cmphex (*(const guint32 *) (data + (height - 1) * stride + 4 * x) & 0xffffff, ==, background);
  cairo_surface_destroy (surface);
}

static void
assert_no_leftovers (const char *dir)
{
  g_autoptr (GDir) listing = g_dir_open (dir, 0, NULL);
  const char *name;

  while ((name = g_dir_read_name (listing)) != NULL)
    g_assert_false (name[0] == '.');
}

static void
test_sample (void)
{
  g_autofree char *model = g_build_filename (source_dir (), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  const char *formats[] = { "svg", "png", "pdf" };

  for (guint i = 0; i < G_N_ELEMENTS (formats); i++)
    {
      g_autofree char *name = g_strdup_printf ("tiny.%s", formats[i]);
      g_autofree char *out = g_build_filename (dir, name, NULL);
      g_autofree char *err = NULL;
      const char *args[] = { model, "-o", out, i == 1 ? "--dark" : "--names", NULL };
      GStatBuf info;

      /* Drawn over a private file, which stays private (ir/atomic-save.h). */
      g_assert_true (g_file_set_contents (out, "old", 3, NULL));
      g_assert_cmpint (g_chmod (out, 0600), ==, 0);
      g_assert_cmpint (run_render (args, &err), ==, 0);
      g_assert_cmpstr (err, ==, "");
      assert_picture (out, formats[i]);
      g_assert_cmpint (g_stat (out, &info), ==, 0);
      g_assert_cmpint (info.st_mode & 0777, ==, 0600);
      if (i == 1)
        assert_png_border_is_background (out);
    }
  {
    g_autofree char *out = g_build_filename (dir, "tiny-lr.PNG", NULL);
    g_autofree char *err = NULL;
    const char *args[] = { model, "-o", out, "--direction", "LR", "--no-shapes", "--expand-all", NULL };

    g_assert_cmpint (run_render (args, &err), ==, 0);
    assert_picture (out, "png");
    /* Rendering again replaces the picture in place. */
    g_clear_pointer (&err, g_free);
    g_assert_cmpint (run_render (args, &err), ==, 0);
    assert_picture (out, "png");
  }
  assert_no_leftovers (dir);
  test_remove_dir (dir);
}

static void
count_text_element (GMarkupParseContext *context, const char *element, const char **names, const char **values,
                    gpointer user_data, GError **error)
{
  guint *n_text = user_data;

  if (strcmp (element, "text") == 0)
    (*n_text)++;
}

/* An SVG export keeps its text as <text> elements (selectable, searchable,
 * as Graphviz's and Netron's are), not cairo's glyph outlines, and is
 * well-formed XML. */
static void
test_svg_text (void)
{
  g_autofree char *model = g_build_filename (source_dir (), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "tiny.svg", NULL);
  g_autofree char *err = NULL, *contents = NULL;
  const char *args[] = { model, "-o", out, "--expand-all", "--names", NULL };
  GMarkupParser parser = { count_text_element, NULL, NULL, NULL, NULL };
  const char *expected[] = { "Conv", "stem.0/Conv", "kernel_shape = [3, 3]", "layer1", "batch×16×32×32" };
  g_autoptr (GMarkupParseContext) context = NULL;
  g_autoptr (GError) error = NULL;
  guint n_text = 0;
  gsize length;

  g_assert_cmpint (run_render (args, &err), ==, 0);
  g_assert_true (g_file_get_contents (out, &contents, &length, NULL));
  context = g_markup_parse_context_new (&parser, 0, &n_text, NULL);
  g_assert_true (g_markup_parse_context_parse (context, contents, length, &error)
                 && g_markup_parse_context_end_parse (context, &error));
  g_assert_no_error (error);
  g_test_message ("tiny-cnn.svg: %zu bytes, %u <text> elements", length, n_text);
  g_assert_cmpuint (n_text, >, 100);
  g_assert_null (strstr (contents, "glyph"));
  /* a node's title, name and attribute, a group's title, an edge's shape */
  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      g_autofree char *element = g_strdup_printf (">%s</text>", expected[i]);
      g_assert_nonnull (strstr (contents, element));
    }
  g_assert_cmpuint (length, <, 120 * 1000);
  g_unlink (out);
  test_remove_dir (dir);
}

static void
assert_one_line_error (const char *const *args, const char *fragment)
{
  g_autofree char *err = NULL;

  g_assert_cmpint (run_render (args, &err), ==, 1);
  g_assert_true (g_str_has_prefix (err, "graft-cli: "));
  g_assert_true (g_str_has_suffix (err, "\n"));
  /* Exactly one line. */
  g_assert_true (strchr (err, '\n') == err + strlen (err) - 1);
  if (fragment != NULL && strstr (err, fragment) == NULL)
    g_error ("stderr '%s' does not mention '%s'", err, fragment);
}

static void
test_errors (void)
{
  g_autofree char *model = g_build_filename (source_dir (), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  g_autofree char *empty = g_build_filename (dir, "empty.onnx", NULL);
  g_autofree char *garbage = g_build_filename (dir, "garbage.onnx", NULL);
  g_autofree char *out = g_build_filename (dir, "out.png", NULL);
  g_autofree char *missing_dir_out = g_build_filename (dir, "no-such-dir", "out.png", NULL);
  g_autofree char *jpg = g_build_filename (dir, "out.jpg", NULL);
  g_autofree char *missing = g_build_filename (dir, "missing.onnx", NULL);
  guint8 noise[512];

  for (guint i = 0; i < sizeof noise; i++)
    noise[i] = (i * 7919 + 13) & 0xff;
  g_assert_true (g_file_set_contents (empty, "", 0, NULL));
  g_assert_true (g_file_set_contents (garbage, (const char *) noise, sizeof noise, NULL));

  {
    const char *args[] = { missing, "-o", out, NULL };
    assert_one_line_error (args, "missing.onnx");
  }
  {
    const char *args[] = { empty, "-o", out, NULL };
    assert_one_line_error (args, NULL);
  }
  {
    const char *args[] = { garbage, "-o", out, NULL };
    assert_one_line_error (args, NULL);
  }
  {
    const char *args[] = { model, "-o", jpg, NULL };
    assert_one_line_error (args, ".svg, .png or .pdf");
  }
  {
    const char *args[] = { model, "-o", missing_dir_out, NULL };
    assert_one_line_error (args, "no-such-dir");
  }
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (jpg, G_FILE_TEST_EXISTS));
  assert_no_leftovers (dir);
  test_remove_dir (dir);
}

/* torchvision exports and a scripted If/Loop module, generated at test
 * time by the shared fixture script (cached). */
static void
test_torchvision (void)
{
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *models = g_build_filename (source_dir (), "tests", "fixtures-generated", "models", NULL);
  g_autofree char *script = g_build_filename (source_dir (), "tests", "fixtures", "make-onnx-models.py", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  const char *names[] = { "resnet18", "mobilenet_v2", "transformer24", "control_flow" };
  const char *generate[] = { test_python, script, models, "resnet18", "mobilenet_v2", "transformer24",
                             "control_flow", NULL };

  run_generator (generate);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *file = g_strdup_printf ("%s.onnx", names[i]);
      g_autofree char *model = g_build_filename (models, file, NULL);

      for (int expand = 0; expand <= 1; expand++)
        for (int f = 0; f < 2; f++)
          {
            const char *format = f == 0 ? "png" : "svg";
            g_autofree char *name = g_strdup_printf ("%s%s.%s", names[i], expand ? "-all" : "", format);
            g_autofree char *out = g_build_filename (dir, name, NULL);
            g_autofree char *err = NULL;
            const char *args[] = { model, "-o", out, expand ? "--expand-all" : "--names", NULL };

            g_test_message ("rendering %s", name);
            /* A graph too big for a readable PNG is refused with a
             * message pointing to SVG/PDF (transformer24 expanded is at
             * the edge: its PNG at scale 1 is 24.0 million pixels). */
            if (run_render (args, &err) != 0)
              {
                g_assert_true (expand && f == 0);
                g_assert_nonnull (strstr (err, "write .svg or .pdf instead"));
                continue;
              }
            assert_picture (out, format);
          }
    }

  /* The bodies of control flow, nested: Loop's body holds an If. */
  {
    g_autofree char *model = g_build_filename (models, "control_flow.onnx", NULL);
    g_autofree char *out = g_build_filename (dir, "else-branch.png", NULL);
    g_autofree char *err = NULL;
    const char *nested[] = { model, "-o", out, "--subgraph", "/Loop", "--subgraph", "/If:else_branch", NULL };
    const char *missing[] = { model, "-o", out, "--subgraph", "/Loop:no_such_body", NULL };

    g_assert_cmpint (run_render (nested, &err), ==, 0);
    assert_picture (out, "png");
    g_clear_pointer (&err, g_free);
    g_assert_cmpint (run_render (missing, &err), ==, 1);
    g_assert_nonnull (strstr (err, "no subgraph attribute of that name"));
  }
  test_remove_dir (dir);
}

static void
png_size (const char *path, int *width, int *height)
{
  cairo_surface_t *surface = cairo_image_surface_create_from_png (path);

  g_assert_cmpint (cairo_surface_status (surface), ==, CAIRO_STATUS_SUCCESS);
  *width = cairo_image_surface_get_width (surface);
  *height = cairo_image_surface_get_height (surface);
  cairo_surface_destroy (surface);
}

/* The scripted If/Loop/BatchNorm module of tests/gui (torch.jit.script),
 * made once into models. */
static void
ensure_control_flow_model (const char *models, const char *model)
{
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *script = g_build_filename (source_dir (), "tests", "gui", "make-control-flow-model.py", NULL);

  g_mkdir_with_parents (models, 0755);
  if (!g_file_test (model, G_FILE_TEST_EXISTS))
    {
      const char *generate[] = { test_python, script, model, NULL };

      run_generator (generate);
    }
}

/* A scripted module with a data-dependent if, a for loop and an eval-mode
 * BatchNorm: --expand-all opens the bodies of its prim::If and prim::Loop
 * in place (the layout tests check the geometry; this, the command). */
static void
test_scripted_control_flow (void)
{
  g_autofree char *models = g_build_filename (source_dir (), "tests", "fixtures-generated", "models", NULL);
  g_autofree char *model = g_build_filename (models, "control_flow_scripted.pt", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  g_autofree char *collapsed = g_build_filename (dir, "control-flow.png", NULL);
  g_autofree char *expanded = g_build_filename (dir, "control-flow-all.png", NULL);
  g_autofree char *expanded_pdf = g_build_filename (dir, "control-flow-all.pdf", NULL);
  int collapsed_width, collapsed_height, width, height;

  ensure_control_flow_model (models, model);
  {
    g_autofree char *err = NULL;
    const char *args[] = { model, "-o", collapsed, NULL };

    g_assert_cmpint (run_render (args, &err), ==, 0);
    g_assert_cmpstr (err, ==, "");
  }
  {
    g_autofree char *err = NULL;
    const char *args[] = { model, "-o", expanded, "--expand-all", NULL };

    g_assert_cmpint (run_render (args, &err), ==, 0);
    g_assert_cmpstr (err, ==, "");
  }
  {
    g_autofree char *err = NULL;
    const char *args[] = { model, "-o", expanded_pdf, "--expand-all", "--direction", "LR", NULL };

    g_assert_cmpint (run_render (args, &err), ==, 0);
    assert_picture (expanded_pdf, "pdf");
  }
  assert_picture (collapsed, "png");
  assert_picture (expanded, "png");
  png_size (collapsed, &collapsed_width, &collapsed_height);
  png_size (expanded, &width, &height);
  g_test_message ("collapsed %d×%d, expanded %d×%d", collapsed_width, collapsed_height, width, height);
  /* BatchNorm's module group and the bodies of its Ifs, of the if and of
   * the for loop: clusters stacked in the picture. */
  g_assert_cmpint (height, >, collapsed_height * 2);
  assert_no_leftovers (dir);
  test_remove_dir (dir);
}

/* check-svg.py: the SVG parsed by Python's xml.etree and checked against
 * the model as onnx or torch.jit reads it; expected are texts that must be
 * <text> elements exactly. */
static void
check_svg (const char *svg, const char *model, const char *const *expected)
{
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *script = g_build_filename (source_dir (), "tests", "layout", "check-svg.py", NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;
  int status;

  g_ptr_array_add (argv, test_python);
  g_ptr_array_add (argv, script);
  g_ptr_array_add (argv, (char *) svg);
  g_ptr_array_add (argv, (char *) model);
  for (guint i = 0; expected != NULL && expected[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) expected[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s: %s%s", svg, out, err);
  g_test_message ("%s: %s", svg, g_strstrip (out));
}

static gsize
file_size (const char *path)
{
  GStatBuf info;

  g_assert_cmpint (g_stat (path, &info), ==, 0);
  return info.st_size;
}

/* Real exports, expanded with names, as SVG: well-formed, every operator
 * type and module path of the model a <text> element, and small. Cairo's
 * SVG surface wrote these at 365 KB (glyph outlines) and, with <text>
 * beside its paths, 135 KB and 107 KB. */
static void
test_svg_fixtures (void)
{
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *models = g_build_filename (source_dir (), "tests", "fixtures-generated", "models", NULL);
  g_autofree char *script = g_build_filename (source_dir (), "tests", "fixtures", "make-onnx-models.py", NULL);
  g_autofree char *resnet18 = g_build_filename (models, "resnet18.onnx", NULL);
  g_autofree char *control_flow = g_build_filename (models, "control_flow_scripted.pt", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  const char *generate[] = { test_python, script, models, "resnet18", NULL };
  const struct {
    const char *model;
    const char *out;
    gsize max_size;
    const char *expected[6];
  } cases[] = {
    { resnet18, "resnet18.svg", 60 * 1000,
      { "Conv", "conv1/Conv", "kernel_shape = [7, 7]", "layer1", "batch×64×56×56", NULL } },
    { control_flow, "control-flow.svg", 45 * 1000,
      { "prim::If", "aten::conv2d", "then · never runs", "max_trip_count = 3", NULL } },
  };

  run_generator (generate);
  ensure_control_flow_model (models, control_flow);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *out = g_build_filename (dir, cases[i].out, NULL);
      g_autofree char *err = NULL;
      const char *args[] = { cases[i].model, "-o", out, "--expand-all", "--names", NULL };

      g_assert_cmpint (run_render (args, &err), ==, 0);
      g_assert_cmpstr (err, ==, "");
      check_svg (out, cases[i].model, cases[i].expected);
      g_test_message ("%s: %zu bytes", cases[i].out, file_size (out));
      g_assert_cmpuint (file_size (out), <, cases[i].max_size);
    }
  assert_no_leftovers (dir);
  test_remove_dir (dir);
}

/* Names from the file are text content: markup characters escaped, the
 * controls XML cannot hold replaced, and the document still parses. */
static void
test_svg_hostile_names (void)
{
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *script = g_build_filename (source_dir (), "tests", "layout", "check-svg.py", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-render-XXXXXX", NULL);
  g_autofree char *model = g_build_filename (dir, "hostile.onnx", NULL);
  g_autofree char *out = g_build_filename (dir, "hostile.svg", NULL);
  g_autofree char *err = NULL;
  const char *generate[] = { test_python, script, "--hostile", model, NULL };
  const char *args[] = { model, "-o", out, "--names", NULL };
  const char *expected[] = { "y<&>", "Relu", NULL };

  run_generator (generate);
  g_assert_cmpint (run_render (args, &err), ==, 0);
  check_svg (out, model, expected);
  test_remove_dir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_test_slow ())
    g_test_add_func ("/render/torchvision", test_torchvision);
  else
    {
      g_test_add_func ("/render/sample", test_sample);
      g_test_add_func ("/render/errors", test_errors);
      g_test_add_func ("/render/svg-text", test_svg_text);
      g_test_add_func ("/render/svg-check/fixtures", test_svg_fixtures);
      g_test_add_func ("/render/svg-check/hostile-names", test_svg_hostile_names);
      g_test_add_func ("/render/scripted-control-flow", test_scripted_control_flow);
    }
  return g_test_run ();
}
