#include "pte/flatbuffer.h"
#include "ir/model-error.h"

#include <string.h>

static gboolean
fail (const GraftFlatbuffer *fb, GError **error, const char *what, gsize position, const char *problem)
{
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
               "%s: %s at byte %" G_GSIZE_FORMAT ": %s (the program is %" G_GSIZE_FORMAT " bytes)", fb->path, what,
               position, problem, fb->size);
  return FALSE;
}

guint32
graft_flatbuffer_get_u32 (const guint8 *p)
{
  return (guint32) p[0] | ((guint32) p[1] << 8) | ((guint32) p[2] << 16) | ((guint32) p[3] << 24);
}

guint64
graft_flatbuffer_get_u64 (const guint8 *p)
{
  return (guint64) graft_flatbuffer_get_u32 (p) | ((guint64) graft_flatbuffer_get_u32 (p + 4) << 32);
}

static guint16
get_u16 (const guint8 *p)
{
  return (guint16) (p[0] | (p[1] << 8));
}

/* TRUE if [position, position + length) lies inside the buffer. */
static gboolean
inside (const GraftFlatbuffer *fb, gsize position, gsize length)
{
  return position <= fb->size && length <= fb->size - position;
}

/* The table at position, with its vtable checked. */
static gboolean
open_table (const GraftFlatbuffer *fb, gsize position, const char *what, GraftFlatbufferTable *out, GError **error)
{
  if (position == 0 || !inside (fb, position, 4) || position % 4 != 0)
    return fail (fb, error, what, position, "the table lies outside the program or is misaligned");
  gint32 soffset = (gint32) graft_flatbuffer_get_u32 (fb->data + position);
  gint64 vtable = (gint64) position - soffset;
  if (vtable < 0 || !inside (fb, (gsize) vtable, 4) || vtable % 2 != 0)
    return fail (fb, error, what, position, "its vtable lies outside the program");
  guint16 vtable_size = get_u16 (fb->data + vtable), table_size = get_u16 (fb->data + vtable + 2);
  if (vtable_size < 4 || vtable_size % 2 != 0 || !inside (fb, (gsize) vtable, vtable_size))
    return fail (fb, error, what, position, "its vtable's size is out of range");
  if (table_size < 4 || !inside (fb, position, table_size))
    return fail (fb, error, what, position, "the table runs past the end of the program");
  out->position = position;
  out->vtable = (gsize) vtable;
  out->vtable_size = vtable_size;
  out->table_size = table_size;
  return TRUE;
}

gboolean
graft_flatbuffer_root (const GraftFlatbuffer *fb, GraftFlatbufferTable *root, GError **error)
{
  if (fb->size < 8)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED,
                   "%s: %" G_GSIZE_FORMAT " bytes, too short for a flatbuffer's root offset and identifier",
                   fb->path, fb->size);
      return FALSE;
    }
  return open_table (fb, graft_flatbuffer_get_u32 (fb->data), "the root table", root, error);
}

gboolean
graft_flatbuffer_table_present (const GraftFlatbufferTable *table)
{
  return table->position != 0;
}

/* Position of field's bytes, 0 when absent. */
static gboolean
field_position (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field, gsize width,
                const char *what, gsize *position, GError **error)
{
  *position = 0;
  if (table->position == 0 || 4 + 2 * (gsize) field + 2 > table->vtable_size)
    return TRUE;
  guint16 offset = get_u16 (fb->data + table->vtable + 4 + 2 * field);
  if (offset == 0)
    return TRUE;
  if (offset < 4 || (gsize) offset + width > table->table_size)
    return fail (fb, error, what, table->position, "the field lies outside its table");
  *position = table->position + offset;
  return TRUE;
}

#define READ_SCALAR(suffix, type, width, get)                                                                       \
  gboolean graft_flatbuffer_read_##suffix (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field, \
                                           const char *what, type fallback, type *value, GError **error)            \
  {                                                                                                                 \
    gsize position;                                                                                                 \
    if (!field_position (fb, table, field, width, what, &position, error))                                           \
      return FALSE;                                                                                                 \
    *value = position ? (type) get : fallback;                                                                      \
    return TRUE;                                                                                                    \
  }

READ_SCALAR (u8, guint8, 1, fb->data[position])
READ_SCALAR (i32, gint32, 4, graft_flatbuffer_get_u32 (fb->data + position))
READ_SCALAR (u32, guint32, 4, graft_flatbuffer_get_u32 (fb->data + position))
READ_SCALAR (i64, gint64, 8, graft_flatbuffer_get_u64 (fb->data + position))
READ_SCALAR (u64, guint64, 8, graft_flatbuffer_get_u64 (fb->data + position))

gboolean
graft_flatbuffer_read_f64 (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                           const char *what, double fallback, double *value, GError **error)
{
  gsize position;
  if (!field_position (fb, table, field, 8, what, &position, error))
    return FALSE;
  if (position == 0)
    *value = fallback;
  else
    {
      guint64 bits = graft_flatbuffer_get_u64 (fb->data + position);
      memcpy (value, &bits, sizeof bits);
    }
  return TRUE;
}

/* Follows the uoffset stored in field to the object it references. */
static gboolean
follow (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field, const char *what,
        gsize *target, GError **error)
{
  gsize position;
  *target = 0;
  if (!field_position (fb, table, field, 4, what, &position, error))
    return FALSE;
  if (position == 0)
    return TRUE;
  guint32 offset = graft_flatbuffer_get_u32 (fb->data + position);
  if (offset == 0 || !inside (fb, position + offset, 4))
    return fail (fb, error, what, position, "its offset points outside the program");
  *target = position + offset;
  return TRUE;
}

gboolean
graft_flatbuffer_read_table (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                             const char *what, GraftFlatbufferTable *out, GError **error)
{
  gsize target;
  memset (out, 0, sizeof *out);
  if (!follow (fb, table, field, what, &target, error))
    return FALSE;
  return target == 0 || open_table (fb, target, what, out, error);
}

static gboolean
open_vector (const GraftFlatbuffer *fb, gsize target, gsize element_size, const char *what,
             GraftFlatbufferVector *out, GError **error)
{
  guint32 length = graft_flatbuffer_get_u32 (fb->data + target);
  if ((guint64) length * element_size > fb->size - (target + 4))
    {
      g_autofree char *problem = g_strdup_printf ("%u elements of %" G_GSIZE_FORMAT " bytes run past the end of the "
                                                  "program", length, element_size);
      return fail (fb, error, what, target, problem);
    }
  out->position = target + 4;
  out->length = length;
  return TRUE;
}

gboolean
graft_flatbuffer_read_vector (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                              gsize element_size, const char *what, GraftFlatbufferVector *out, GError **error)
{
  gsize target;
  memset (out, 0, sizeof *out);
  if (!follow (fb, table, field, what, &target, error))
    return FALSE;
  return target == 0 || open_vector (fb, target, element_size, what, out, error);
}

gboolean
graft_flatbuffer_read_string (const GraftFlatbuffer *fb, const GraftFlatbufferTable *table, guint field,
                              const char *what, char **out, GError **error)
{
  GraftFlatbufferVector bytes;
  gsize target;
  *out = NULL;
  if (!follow (fb, table, field, what, &target, error))
    return FALSE;
  if (target == 0)
    return TRUE;
  if (!open_vector (fb, target, 1, what, &bytes, error))
    return FALSE;
  if (!inside (fb, bytes.position, (gsize) bytes.length + 1) || fb->data[bytes.position + bytes.length] != '\0')
    return fail (fb, error, what, target, "the string has no terminating NUL inside the program");
  /* FlatBuffers strings are UTF-8; names become node and value names. */
  if (memchr (fb->data + bytes.position, '\0', bytes.length) != NULL ||
      !g_utf8_validate_len ((const char *) fb->data + bytes.position, bytes.length, NULL))
    return fail (fb, error, what, target, "the string holds a NUL or is not UTF-8");
  *out = g_strndup ((const char *) fb->data + bytes.position, bytes.length);
  return TRUE;
}

gboolean
graft_flatbuffer_vector_table (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index,
                               const char *what, GraftFlatbufferTable *out, GError **error)
{
  g_return_val_if_fail (index < vector->length, FALSE);
  gsize slot = vector->position + 4 * (gsize) index;
  guint32 offset = graft_flatbuffer_get_u32 (fb->data + slot);
  if (offset == 0 || !inside (fb, slot + offset, 4))
    return fail (fb, error, what, slot, "its offset points outside the program");
  return open_table (fb, slot + offset, what, out, error);
}

gint32
graft_flatbuffer_vector_i32 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index)
{
  g_return_val_if_fail (index < vector->length, 0);
  return (gint32) graft_flatbuffer_get_u32 (fb->data + vector->position + 4 * (gsize) index);
}

gint64
graft_flatbuffer_vector_i64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index)
{
  return (gint64) graft_flatbuffer_vector_u64 (fb, vector, index);
}

guint64
graft_flatbuffer_vector_u64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index)
{
  g_return_val_if_fail (index < vector->length, 0);
  return graft_flatbuffer_get_u64 (fb->data + vector->position + 8 * (gsize) index);
}

double
graft_flatbuffer_vector_f64 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index)
{
  guint64 bits = graft_flatbuffer_vector_u64 (fb, vector, index);
  double value;
  memcpy (&value, &bits, sizeof value);
  return value;
}

guint8
graft_flatbuffer_vector_u8 (const GraftFlatbuffer *fb, const GraftFlatbufferVector *vector, guint index)
{
  g_return_val_if_fail (index < vector->length, 0);
  return fb->data[vector->position + index];
}
