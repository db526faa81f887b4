/* Hostile ExecuTorch programs, made from programs executorch 1.5.1 wrote
 * (the fuzz seeds tests/fuzz/corpus/torch-archive/executorch-*.pte): truncated at every length,
 * every word of the flatbuffer overwritten, and aimed damage — vectors
 * claiming a billion elements, offsets out of range, lists that hold
 * themselves, constants past their segment. Each load ends in a model or
 * a GError of the model domain naming the file, never a crash or a read
 * outside the bytes (this suite also runs under ASan/UBSan). */
#include <stdio.h>
#include <string.h>
#include "loader.h"
#include "lint/diagnostics.h"
#include "pte/flatbuffer.h"
#include "../test-scratch.h"

static char *tmp_dir;

static GBytes *
read_seed (const char *name)
{
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *path = g_build_filename (source ? source : ".", "tests", "fuzz", "corpus", "torch-archive", name, NULL);
  g_autofree char *data = NULL;
  gsize size;
  g_assert_true (g_file_get_contents (path, &data, &size, NULL));
  return g_bytes_new_take (g_steal_pointer (&data), size);
}

/* Loads data as a .pte; returns the error (NULL when it loaded), after
 * checking the load either gave a model or a named model error. */
static GError *
load (const guint8 *data, gsize size)
{
  g_autofree char *path = g_build_filename (tmp_dir, "program.pte", NULL);
  GError *error = NULL;
  /* a new file each time: truncating the last one (g_file_set_contents,
   * fopen "wb") took milliseconds on the build machine's file system */
  g_remove (path);
  FILE *file = fopen (path, "wb");
  g_assert_nonnull (file);
  g_assert_cmpuint (fwrite (data, 1, size, file), ==, size);
  g_assert_cmpint (fclose (file), ==, 0);
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_true ((model == NULL) == (error != NULL));
  if (model != NULL)
    {
      G_GNUC_UNUSED g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
      return NULL;
    }
  g_assert_true (error->domain == GRAFT_MODEL_ERROR);
  g_assert_true (g_str_has_prefix (error->message, path));
  return error;
}

static void
assert_fails_with (const guint8 *data, gsize size, const char *fragment)
{
  g_autoptr(GError) error = load (data, size);
  g_assert_nonnull (error);
  if (strstr (error->message, fragment) == NULL)
    g_error ("expected an error with \"%s\", got: %s", fragment, error->message);
  g_test_message ("%s", error->message);
}

static guint64
program_size (GBytes *bytes)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  g_assert_cmpuint (size, >, 32);
  g_assert_true (memcmp (data + 8, "eh00", 4) == 0);
  return graft_flatbuffer_get_u64 (data + 16);
}

static void
test_seeds_load (void)
{
  static const char *const seeds[] = { "executorch-mlp.pte", "executorch-mlp_xnnpack.pte",
                                       "executorch-nonportable.pte", "executorch-cnn_inline.pte" };
  for (guint i = 0; i < G_N_ELEMENTS (seeds); i++)
    {
      g_autoptr(GBytes) bytes = read_seed (seeds[i]);
      gsize size;
      const guint8 *data = g_bytes_get_data (bytes, &size);
      g_autoptr(GError) error = load (data, size);
      g_assert_no_error (error);
    }
}

/* Cut anywhere before the end of its data, a program fails by name. */
static void
test_truncated (void)
{
  g_autoptr(GBytes) bytes = read_seed ("executorch-mlp.pte");
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  guint failures = 0;
  guint tried = 0;
  /* every length inside the flatbuffer, every 16th in the segments */
  for (gsize length = 0; length < size; length += length < program_size (bytes) ? 1 : 16, tried++)
    {
      g_autoptr(GError) error = load (data, length);
      if (length < program_size (bytes))
        g_assert_nonnull (error);
      failures += error != NULL;
    }
  g_test_message ("%u of %u truncations refused", failures, tried);
  g_assert_cmpuint (failures, >=, program_size (bytes));
}

/* Every 4-byte word of the flatbuffer overwritten with values that make
 * offsets, lengths and indices hostile. */
static void
test_every_word (void)
{
  static const guint32 replacements[] = { 0xffffffffu, 0x7ffffff0u, 0x40000000u, 0x0000ffffu, 0x00000001u };
  g_autoptr(GBytes) bytes = read_seed ("executorch-mlp.pte");
  gsize size;
  const guint8 *original = g_bytes_get_data (bytes, &size);
  g_autofree guint8 *data = g_memdup2 (original, size);
  guint loaded = 0, refused = 0;
  for (gsize position = 0; position + 4 <= program_size (bytes); position += 4)
    for (guint k = 0; k < G_N_ELEMENTS (replacements); k++)
      {
        guint32 word = GUINT32_TO_LE (replacements[k]);
        memcpy (data + position, &word, 4);
        g_autoptr(GError) error = load (data, size);
        error ? refused++ : loaded++;
        memcpy (data + position, original + position, 4);
      }
  g_test_message ("%u loads refused, %u still loaded", refused, loaded);
  g_assert_cmpuint (refused, >, 0);
}

/* Finds the plan's values vector and the position of its length. */
typedef struct {
  GraftFlatbuffer fb;
  GraftFlatbufferTable program, plan;
  GraftFlatbufferVector values;
} Located;

static void
locate (guint8 *data, gsize size, Located *l)
{
  GraftFlatbufferVector plans;
  l->fb = (GraftFlatbuffer) { data, size, "seed" };
  g_assert_true (graft_flatbuffer_root (&l->fb, &l->program, NULL));
  g_assert_true (graft_flatbuffer_read_vector (&l->fb, &l->program, 1, 4, "plans", &plans, NULL));
  g_assert_true (graft_flatbuffer_vector_table (&l->fb, &plans, 0, "plan", &l->plan, NULL));
  g_assert_true (graft_flatbuffer_read_vector (&l->fb, &l->plan, 2, 4, "values", &l->values, NULL));
}

static void
put_u32 (guint8 *at, guint32 value)
{
  value = GUINT32_TO_LE (value);
  memcpy (at, &value, 4);
}

/* The first value of kind (an EValue's union type) and its items vector. */
static gint
find_value (Located *l, guint8 kind, GraftFlatbufferVector *items, gsize item_size)
{
  for (guint i = 0; i < l->values.length; i++)
    {
      GraftFlatbufferTable evalue, payload;
      guint8 type;
      g_assert_true (graft_flatbuffer_vector_table (&l->fb, &l->values, i, "value", &evalue, NULL));
      g_assert_true (graft_flatbuffer_read_u8 (&l->fb, &evalue, 0, "type", 0, &type, NULL));
      if (type != kind)
        continue;
      g_assert_true (graft_flatbuffer_read_table (&l->fb, &evalue, 1, "payload", &payload, NULL));
      g_assert_true (graft_flatbuffer_read_vector (&l->fb, &payload, 0, item_size, "items", items, NULL));
      if (items->length > 0)
        return (gint) i;
    }
  return -1;
}

static void
test_aimed (void)
{
  g_autoptr(GBytes) bytes = read_seed ("executorch-mlp.pte");
  gsize size;
  const guint8 *original = g_bytes_get_data (bytes, &size);
  g_autofree guint8 *data = g_memdup2 (original, size);
  Located l;
  GraftFlatbufferVector items;

  /* the root table far outside */
  put_u32 (data, 0xfffffff0u);
  assert_fails_with (data, size, "the root table");
  memcpy (data, original, size);

  /* a billion values */
  locate (data, size, &l);
  put_u32 (data + l.values.position - 4, 0x3fffffffu);
  assert_fails_with (data, size, "run past the end of the program");
  memcpy (data, original, size);

  /* an IntList (value kind 7) holding itself: the lists are not followed
   * as a graph, so this cannot loop; it is named */
  locate (data, size, &l);
  gint list = find_value (&l, 7, &items, 8);
  g_assert_cmpint (list, >=, 0);
  put_u32 (data + items.position, (guint32) list);
  put_u32 (data + items.position + 4, 0);
  assert_fails_with (data, size, "holds value");
  memcpy (data, original, size);

  /* an IntList item a million values away */
  put_u32 (data + items.position, 1000000);
  assert_fails_with (data, size, "which does not exist");
  memcpy (data, original, size);

  /* the segments start past the end of the file */
  put_u32 (data + 24, (guint32) size + 4096);
  assert_fails_with (data, size, "past the end of the file");
  memcpy (data, original, size);

  /* a constant's offset far past its segment: the constant segment's
   * offsets are Program field 5, a SubsegmentOffsets table */
  {
    GraftFlatbufferTable constant_segment;
    GraftFlatbufferVector offsets;
    locate (data, size, &l);
    g_assert_true (graft_flatbuffer_read_table (&l.fb, &l.program, 5, "constant segment", &constant_segment, NULL));
    g_assert_true (graft_flatbuffer_read_vector (&l.fb, &constant_segment, 1, 8, "offsets", &offsets, NULL));
    g_assert_cmpuint (offsets.length, >, 1);
    put_u32 (data + offsets.position + 8, 0x7fffffffu);
    assert_fails_with (data, size, "run past the end of segment");
    memcpy (data, original, size);
  }
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = graft_test_scratch_dir ("graft-pte-hostile-XXXXXX", NULL);
  g_test_add_func ("/pte/hostile/seeds-load", test_seeds_load);
  g_test_add_func ("/pte/hostile/truncated", test_truncated);
  g_test_add_func ("/pte/hostile/every-word", test_every_word);
  g_test_add_func ("/pte/hostile/aimed", test_aimed);
  return g_test_run ();   /* tmp_dir goes at exit (graft_test_scratch_dir) */
}
