#include "torchscript/debug-source.h"

#include <string.h>
#include "pytorch/pickle.h"

/* A code file's lines (1-based) → "file:line" of the original Python. */
typedef GHashTable LineMap;

static GraftPickleValue *
item (GraftPickleValue *value, guint i, GraftPickleKind kind)
{
  GraftPickleValue *found;

  if (value == NULL || (value->kind != GRAFT_PICKLE_TUPLE && value->kind != GRAFT_PICKLE_LIST)
      || i >= graft_pickle_value_get_length (value))
    return NULL;
  found = graft_pickle_value_get_item (value, i);
  return found != NULL && found->kind == kind ? found : NULL;
}

/* The original source's text, as the string table spells it in parts. */
static GString *
join_parts (GraftPickleValue *strings, GraftPickleValue *parts)
{
  GString *text = g_string_new (NULL);

  for (guint i = 0; i < graft_pickle_value_get_length (parts); i++)
    {
      GraftPickleValue *index = item (parts, i, GRAFT_PICKLE_INT);
      GraftPickleValue *part = index != NULL && index->i >= 0 ? item (strings, index->i, GRAFT_PICKLE_STRING) : NULL;

      if (part != NULL)
        g_string_append_len (text, part->s, part->s_len);
    }
  return text;
}

static guint
count_lines (const char *text, gsize length)
{
  guint lines = 0;

  for (gsize i = 0; i < length; i++)
    lines += text[i] == '\n';
  return lines;
}

/* One entry: the code byte offset and the source range it came from. */
static void
map_entry (LineMap *map, GraftPickleValue *strings, GraftPickleValue *entry, const char *code, gsize code_length)
{
  GraftPickleValue *offset = item (entry, 0, GRAFT_PICKLE_INT);
  GraftPickleValue *range = item (entry, 1, GRAFT_PICKLE_TUPLE);
  GraftPickleValue *source = item (range, 0, GRAFT_PICKLE_TUPLE);
  GraftPickleValue *start = item (range, 1, GRAFT_PICKLE_INT);
  GraftPickleValue *parts = item (source, 0, GRAFT_PICKLE_LIST);
  GraftPickleValue *file_index = item (source, 1, GRAFT_PICKLE_INT);
  GraftPickleValue *first_line = item (source, 2, GRAFT_PICKLE_INT);
  GraftPickleValue *file;
  g_autoptr(GString) text = NULL;
  guint code_line;

  if (offset == NULL || start == NULL || parts == NULL || file_index == NULL || first_line == NULL
      || graft_pickle_value_get_length (parts) == 0 || offset->i < 0 || (guint64) offset->i > code_length
      || file_index->i < 0 || (file = item (strings, file_index->i, GRAFT_PICKLE_STRING)) == NULL
      || file->s_len == 0)
    return;
  code_line = count_lines (code, offset->i) + 1;
  /* The first entry on a code line is the statement's own range. */
  if (g_hash_table_contains (map, GUINT_TO_POINTER (code_line)))
    return;
  text = join_parts (strings, parts);
  if (start->i < 0 || (gsize) start->i > text->len)
    return;
  g_hash_table_insert (map, GUINT_TO_POINTER (code_line),
                       g_strdup_printf ("%s:%" G_GINT64_FORMAT, file->s,
                                        first_line->i + count_lines (text->str, start->i)));
}

static LineMap *
read_line_map (GraftTorchArchive *archive, const char *code_record)
{
  LineMap *map = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  g_autofree char *debug_record = g_strconcat (code_record, ".debug_pkl", NULL);
  g_autoptr(GBytes) code = NULL;
  g_autoptr(GBytes) debug = NULL;
  g_autoptr(GraftPickleValue) table = NULL;
  GraftPickleValue *strings, *entries;
  gsize code_length, debug_length;
  const char *code_text;
  const guint8 *debug_data;

  if (!graft_torch_archive_has (archive, debug_record)
      || (code = graft_torch_archive_read (archive, code_record, NULL)) == NULL
      || (debug = graft_torch_archive_read (archive, debug_record, NULL)) == NULL)
    return map;
  code_text = g_bytes_get_data (code, &code_length);
  debug_data = g_bytes_get_data (debug, &debug_length);
  table = graft_pickle_load (debug_data, debug_length, debug_record, NULL, NULL);
  if (table == NULL || !graft_pickle_value_is_string (item (table, 0, GRAFT_PICKLE_STRING), "FORMAT_WITH_STRING_TABLE"))
    return map;
  strings = item (table, 1, GRAFT_PICKLE_TUPLE);
  entries = item (table, 2, GRAFT_PICKLE_TUPLE);
  for (guint i = 0; strings != NULL && entries != NULL && i < graft_pickle_value_get_length (entries); i++)
    map_entry (map, strings, item (entries, i, GRAFT_PICKLE_TUPLE), code_text, code_length);
  return map;
}

typedef struct {
  GraftTorchArchive *archive;
  GHashTable *files;  /* code record → LineMap */
} Annotator;

static void
annotate_node (GraftNode *node, gpointer user_data)
{
  Annotator *annotator = user_data;
  const char *colon;
  g_autofree char *record = NULL;
  LineMap *map;
  const char *location;

  if (node->source_range == NULL || (colon = strrchr (node->source_range, ':')) == NULL)
    return;
  record = g_strndup (node->source_range, colon - node->source_range);
  map = g_hash_table_lookup (annotator->files, record);
  if (map == NULL)
    {
      map = read_line_map (annotator->archive, record);
      g_hash_table_insert (annotator->files, g_strdup (record), map);
    }
  location = g_hash_table_lookup (map, GUINT_TO_POINTER ((guint) g_ascii_strtoull (colon + 1, NULL, 10)));
  if (location != NULL)
    {
      g_free (node->python_source);
      node->python_source = g_strdup (location);
    }
}

void
graft_debug_source_annotate (GraftTorchArchive *archive, GraftGraph *graph)
{
  Annotator annotator = {
    archive,
    g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_hash_table_unref),
  };

  graft_graph_foreach_node_recursive (graph, annotate_node, &annotator);
  g_hash_table_unref (annotator.files);
}
