#include "layout/label-pool.h"

#include <string.h>
#include "layout/labels.h"
#include "layout/text.h"

/* A label's unfitted lines, each followed by its NUL: one key for lines
 * that no text can make ambiguous. */
typedef struct {
  char *bytes;
  gsize length;
  guint hash;
} LabelKey;

typedef struct {
  LabelKey key;            /* bytes owned */
  GraftPooledLabel label;
} Entry;

struct _GraftLabelPool {
  double max_width;
  GMutex lock;             /* guards both tables */
  GHashTable *labels;      /* LabelKey* (in its Entry) → Entry*, owned */
  GHashTable *texts;       /* char* → itself, owned */
};

static guint
label_key_hash (gconstpointer data)
{
  return ((const LabelKey *) data)->hash;
}

static gboolean
label_key_equal (gconstpointer a, gconstpointer b)
{
  const LabelKey *x = a, *y = b;

  return x->hash == y->hash && x->length == y->length && memcmp (x->bytes, y->bytes, x->length) == 0;
}

static void
entry_free (gpointer data)
{
  Entry *entry = data;

  g_free (entry->key.bytes);
  g_strfreev (entry->label.lines);
  g_free (entry);
}

GraftLabelPool *
graft_label_pool_new (double max_width)
{
  GraftLabelPool *pool = g_new0 (GraftLabelPool, 1);

  pool->max_width = max_width;
  g_mutex_init (&pool->lock);
  pool->labels = g_hash_table_new_full (label_key_hash, label_key_equal, NULL, entry_free);
  pool->texts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return pool;
}

void
graft_label_pool_free (GraftLabelPool *pool)
{
  if (pool == NULL)
    return;
  g_hash_table_unref (pool->labels);
  g_hash_table_unref (pool->texts);
  g_mutex_clear (&pool->lock);
  g_free (pool);
}

/* key over texts, in buffer when it fits (else allocated: *allocated). */
static LabelKey
make_key (GPtrArray *texts, char *buffer, gsize buffer_size, char **allocated)
{
  LabelKey key = { buffer, 0, 5381 };
  gsize length = 0;

  for (guint i = 0; i < texts->len; i++)
    length += strlen (g_ptr_array_index (texts, i)) + 1;
  if (length > buffer_size)
    key.bytes = *allocated = g_malloc (length);
  for (guint i = 0; i < texts->len; i++)
    {
      const char *text = g_ptr_array_index (texts, i);
      gsize size = strlen (text) + 1;

      memcpy (key.bytes + key.length, text, size);
      key.length += size;
    }
  for (gsize i = 0; i < key.length; i++)
    key.hash = key.hash * 33 + (guchar) key.bytes[i];
  return key;
}

const GraftPooledLabel *
graft_label_pool_fit (GraftLabelPool *pool, GPtrArray *texts, cairo_t *measure)
{
  char buffer[512];
  g_autofree char *allocated = NULL;
  LabelKey key = make_key (texts, buffer, sizeof buffer, &allocated);
  Entry *entry;
  char **lines;

  g_mutex_lock (&pool->lock);
  entry = g_hash_table_lookup (pool->labels, &key);
  g_mutex_unlock (&pool->lock);
  if (entry != NULL)
    return &entry->label;

  /* Fitted and measured unlocked; a text two threads fit at once is
   * fitted alike, and the first entry stays. */
  lines = g_new (char *, texts->len + 1);
  for (guint i = 0; i < texts->len; i++)
    {
      graft_text_select (measure, i == 0 ? GRAFT_TEXT_TITLE : GRAFT_TEXT_BODY);
      lines[i] = graft_text_elide (measure, g_ptr_array_index (texts, i), pool->max_width - 2 * GRAFT_LABEL_PAD_X);
    }
  lines[texts->len] = NULL;
  entry = g_new0 (Entry, 1);
  entry->key = key;
  entry->key.bytes = g_memdup2 (key.bytes, key.length);
  entry->label.lines = lines;
  graft_label_box_size (lines, measure, &entry->label.width, &entry->label.height);

  g_mutex_lock (&pool->lock);
  {
    Entry *first = g_hash_table_lookup (pool->labels, &entry->key);

    if (first != NULL)
      {
        entry_free (entry);
        entry = first;
      }
    else
      g_hash_table_add (pool->labels, entry);
  }
  g_mutex_unlock (&pool->lock);
  return &entry->label;
}

const char *
graft_label_pool_intern (GraftLabelPool *pool, const char *text)
{
  const char *stored;

  if (text == NULL)
    return NULL;
  g_mutex_lock (&pool->lock);
  stored = g_hash_table_lookup (pool->texts, text);
  if (stored == NULL)
    {
      char *copy = g_strdup (text);

      g_hash_table_add (pool->texts, copy);
      stored = copy;
    }
  g_mutex_unlock (&pool->lock);
  return stored;
}

